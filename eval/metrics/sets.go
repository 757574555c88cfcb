package metrics

import (
	"fmt"
	"io"
	"strings"
)

// SetMetrics is one benchmark's row of the results: its name, its file and its metrics (strict
// grading), with avg@k under rStar2's grading beside them.
type SetMetrics struct {
	Name string `json:"name"`
	Data string `json:"data"`
	Metrics
	RStar2AvgPass1 float64 `json:"rstar2_avg_pass@1"`
}

// WriteSetTable writes the paper's table: one row per set with avg@k and its 95% CI, pass@k,
// maj@k, the mean response tokens and tool calls per response, then avg@k of every set on one
// line, as papers lay a model's results out across benchmarks.
func WriteSetTable(w io.Writer, rows []SetMetrics) {
	fmt.Fprintln(w, "| set | problems | k | avg@k (%) | 95% CI | pass@k (%) | maj@k (%) | mean response tokens | tool calls / response | avg@k, rstar2 grading (%) |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %d | %.1f | [%.1f, %.1f] | %.1f | %.1f | %.0f | %.2f | %.1f |\n",
			escapeCell(r.Name), r.NProblems, r.K, 100*r.AvgPass1, 100*r.AvgPass1CI[0], 100*r.AvgPass1CI[1],
			100*r.PassAtK, 100*r.MajAtK, r.MeanResponseTokens, r.ToolCallsPerResponse, 100*r.RStar2AvgPass1)
	}
	if len(rows) < 2 {
		return
	}
	var head, rule, row strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&head, " %s |", escapeCell(r.Name))
		rule.WriteString(" ---: |")
		fmt.Fprintf(&row, " %.1f |", 100*r.AvgPass1)
	}
	fmt.Fprintf(w, "\n| avg@%d (%%) |%s\n| --- |%s\n| this model |%s\n", rows[0].K, head.String(), rule.String(), row.String())
}
