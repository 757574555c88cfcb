package metrics

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteMarkdown writes the summary for people: a table with a row for all problems and one per
// source (alphabetical), then the pass@k' curve over all problems at k' = 1, 2, 4, … and K.
// Rates are percentages.
func WriteMarkdown(w io.Writer, s Summary) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "| source | problems | k | avg pass@1 (%) | 95% CI | pass@k (%) | maj@k (%) | mean tokens (correct / incorrect) | tool calls / response | failed calls (%) | truncated (%) |")
	fmt.Fprintln(bw, "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: |")
	writeRow(bw, "all", s.Metrics)
	for _, source := range slices.Sorted(maps.Keys(s.PerSource)) {
		writeRow(bw, sourceLabel(source), s.PerSource[source])
	}
	if len(s.PassAtKCurve) > 0 {
		var head, rule, row strings.Builder
		for _, k := range curveKs(s.K) {
			fmt.Fprintf(&head, " %d |", k)
			rule.WriteString(" ---: |")
			fmt.Fprintf(&row, " %.1f |", 100*s.PassAtKCurve[k-1])
		}
		fmt.Fprintf(bw, "\n| k' |%s\n| --- |%s\n| pass@k' (all, %%) |%s\n", head.String(), rule.String(), row.String())
	}
	return bw.Flush()
}

func writeRow(w io.Writer, name string, m Metrics) {
	fmt.Fprintf(w, "| %s | %d | %d | %.1f | [%.1f, %.1f] | %.1f | %.1f | %.0f (%.0f / %.0f) | %.2f | %.1f | %.1f |\n",
		escapeCell(name), m.NProblems, m.K, 100*m.AvgPass1, 100*m.AvgPass1CI[0], 100*m.AvgPass1CI[1],
		100*m.PassAtK, 100*m.MajAtK, m.MeanResponseTokens, m.MeanResponseTokensCorrect,
		m.MeanResponseTokensIncorrect, m.ToolCallsPerResponse, 100*m.FailedToolCallRate, 100*m.TruncationRate)
}

// curveKs lists 1, 2, 4, … below K, then K.
func curveKs(k int) []int {
	var ks []int
	for p := 1; p < k; p *= 2 {
		ks = append(ks, p)
	}
	return append(ks, k)
}

func sourceLabel(source string) string {
	if source == "" {
		return "-"
	}
	return source
}

// escapeCell keeps a source name from breaking the table.
func escapeCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
