package eval

import (
	"fmt"
	"gorstar/eval/metrics"
	"io"
	"strings"
)

// writeReport is RESULTS.md: what was evaluated and how, the strict table, the rstar2 numbers
// beside it and the warnings.
func writeReport(w io.Writer, man Manifest, res *Result) error {
	model := man.Model
	if model == "" {
		model = man.ServedModel + " at " + strings.Join(man.Endpoints, ", ")
	}
	fmt.Fprintf(w, "# Evaluation of %s on %s\n\n", model, man.Data)
	fmt.Fprintf(w, "%d problems × %d samples; temperature %g, top-p %g, up to %d tokens and %d turns; tool: %v; template %s; seed %d; gorstar %s.\n\n",
		man.Problems, man.Samples, man.Temperature, man.TopP, man.MaxResponseTokens, man.MaxTurns, man.Tool, man.Template, man.Seed, man.Gorstar)
	if len(res.Sets) > 1 {
		var t strings.Builder
		metrics.WriteSetTable(&t, res.Sets)
		fmt.Fprintf(w, "## Per set\n\n%s\n", t.String())
	}
	fmt.Fprintf(w, "## Strict grading\n\n")
	if err := metrics.WriteMarkdown(w, res.Summary); err != nil {
		return err
	}
	r := res.RStar2
	fmt.Fprintf(w, "\n## rStar2 grading (the release's leniencies)\n\n| avg pass@1 (%%) | pass@k (%%) | maj@k (%%) |\n| ---: | ---: | ---: |\n| %.1f | %.1f | %.1f |\n",
		100*r.AvgPass1, 100*r.PassAtK, 100*r.MajAtK)
	if len(res.Warnings) > 0 {
		fmt.Fprintf(w, "\n## Warnings\n\n")
		for _, s := range res.Warnings {
			fmt.Fprintf(w, "- %s\n", s)
		}
	}
	_, err := fmt.Fprintf(w, "\nData sha256 %s; model sha256 %s; template sha256 %s.\n", man.DataSHA256, orNone(man.ModelSHA256), man.TemplateSHA256)
	return err
}

func orNone(s string) string {
	if s == "" {
		return "(remote)"
	}
	return s
}
