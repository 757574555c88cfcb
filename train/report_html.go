package train

import (
	"fmt"
	"html/template"
)

// reportTemplate is report.html. html/template escapes every value by its context; only the SVG
// charts, built and escaped by chart.go, go in as they are.
var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"svg": svgHTML,
	"pct": func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) },
	"optPct": func(v *float64) string {
		if v == nil {
			return "—"
		}
		return fmt.Sprintf("%.1f%%", 100**v)
	},
	"optSec": func(v *float64) string {
		if v == nil {
			return "—"
		}
		return fmt.Sprintf("%.0f s", *v)
	},
	"f1": func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"f2": func(v float64) string { return fmt.Sprintf("%.2f", v) },
}).Parse(reportHTML))

const reportHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gorstar run {{.Run}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2937; margin: 24px auto; max-width: 1160px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 10px; border-bottom: 1px solid #e5e7eb; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 8px; }
.muted { color: #6b7280; }
table.evals { border-collapse: collapse; }
table.evals th, table.evals td { padding: 5px 12px; border-bottom: 1px solid #e5e7eb; text-align: right; }
table.evals th:first-child, table.evals td:first-child { text-align: left; }
table.evals th { background: #f3f4f6; font-weight: 600; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.chart-box { border: 1px solid #e5e7eb; border-radius: 6px; padding: 6px; background: #fff; }
.chart-box .keys { font-size: 11px; color: #9ca3af; margin: 0 0 0 8px; }
svg.chart { display: block; font-family: system-ui, sans-serif; }
svg.chart .title { font-size: 13px; font-weight: 600; fill: #111827; }
svg.chart .legend, svg.chart .tick { font-size: 11px; fill: #4b5563; }
svg.chart .label { font-size: 11px; fill: #6b7280; }
svg.chart .grid { stroke: #f0f1f3; } svg.chart .axis { stroke: #9ca3af; }
svg.chart .marker { stroke: #6b7280; stroke-dasharray: 4 3; } svg.chart .marker-label { font-size: 10px; fill: #374151; }
.sample { border: 1px solid #e5e7eb; border-radius: 6px; margin: 10px 0; }
.sample .head { background: #f9fafb; padding: 6px 10px; border-bottom: 1px solid #e5e7eb; font-size: 13px; }
.sample pre { margin: 0; padding: 10px; white-space: pre-wrap; word-break: break-word; font: 12px/1.5 ui-monospace, "DejaVu Sans Mono", monospace; max-height: 420px; overflow: auto; }
.ok { color: #15803d; font-weight: 600; } .bad { color: #b91c1c; font-weight: 600; }
.seg-tool_call { background: #dbeafe; color: #1e3a8a; }
.seg-tool_response { background: #fef3c7; color: #78350f; }
.seg-answer { background: #dcfce7; color: #14532d; font-weight: 600; }
.status { display: inline-block; padding: 0 5px; border-radius: 3px; font-size: 11px; margin-right: 3px; background: #e5e7eb; }
.status-ok { background: #dcfce7; } .status-error, .status-timeout, .status-memory, .status-output_limit, .status-parse_error { background: #fee2e2; }
details pre { background: #f9fafb; padding: 10px; font-size: 12px; overflow: auto; }
</style>
</head>
<body>
<h1>gorstar run <code>{{.Run}}</code></h1>
<p class="muted">SFT → GRPO-RoC RL stages → held-out evaluation after each stage. Charts are drawn from
<code>sft/metrics.jsonl</code> and <code>rl/metrics.jsonl</code>; dashed lines mark stage boundaries.</p>

<h2 id="eval">Held-out evaluation</h2>
{{if .Evals}}
<table class="evals">
<tr><th>stage</th><th>avg pass@1</th><th>problems × k</th><th>tool-use rate</th><th>failed tool calls</th><th>tool calls / response</th><th>mean response tokens</th><th>wall time</th></tr>
{{range .Evals}}<tr><td>{{.Stage}}</td><td>{{pct .AvgPass1}}</td><td>{{.NProblems}} × {{.K}}</td><td>{{optPct .ToolUseRate}}</td><td>{{pct .FailedToolCallRate}}</td><td>{{f2 .ToolCallsPerResponse}}</td><td>{{f1 .MeanResponseTokens}}</td><td>{{optSec .WallSeconds}}</td></tr>
{{end}}</table>
{{if .SetStages}}<h3>Per benchmark</h3>
<table class="evals">
<tr><th>stage</th>{{range .SetNames}}<th>{{.}}</th>{{end}}</tr>
{{range .SetStages}}<tr><td>{{.Stage}}</td>{{range .Sets}}<td>{{pct .AvgPass1}} <span class="muted">[{{pct (index .AvgPass1CI 0)}}, {{pct (index .AvgPass1CI 1)}}] · {{.NProblems}} × {{.K}}<br>pass@k {{pct .PassAtK}} · maj@k {{pct .MajAtK}} · {{f1 .MeanResponseTokens}} tokens · {{f2 .ToolCallsPerResponse}} calls</span></td>{{end}}</tr>
{{end}}</table>
<p class="muted">avg@k with its 95% bootstrap interval, problems × samples; pass@k, maj@k, mean response tokens and tool calls per response below.</p>{{end}}
{{else}}<p class="muted">No evaluation yet (eval/*.json).</p>{{end}}

<h2 id="sft">SFT</h2>
{{if .SFTCharts}}<div class="charts">{{range .SFTCharts}}<div class="chart-box" id="chart-{{.ID}}">{{svg .SVG}}<p class="keys">{{range $i, $k := .Keys}}{{if $i}}, {{end}}{{$k}}{{end}}</p></div>{{end}}</div>
{{else}}<p class="muted">No SFT metrics yet (sft/metrics.jsonl).</p>{{end}}

<h2 id="rl">RL</h2>
{{if .RLCharts}}<div class="charts">{{range .RLCharts}}<div class="chart-box" id="chart-{{.ID}}">{{svg .SVG}}<p class="keys">{{range $i, $k := .Keys}}{{if $i}}, {{end}}{{$k}}{{end}}</p></div>{{end}}</div>
{{else}}<p class="muted">No RL metrics yet (rl/metrics.jsonl).</p>{{end}}
{{if .Absent}}<p class="muted">Not in this run's metrics: {{range $i, $a := .Absent}}{{if $i}}; {{end}}{{$a}}{{end}}.</p>{{end}}

<h2 id="samples">Sample trajectories</h2>
{{range .Samples}}<h3>{{.Title}}</h3>
{{range .Samples}}<div class="sample">
<div class="head">{{if .Correct}}<span class="ok">✓ correct</span>{{else}}<span class="bad">✗ wrong</span>{{end}}
· problem <code>{{.ProblemID}}</code> #{{.Sample}} · answer <code>{{.Extracted}}</code> · {{.NumTurns}} turns · {{.GeneratedTokens}} tokens · finish {{.Finish}}
{{if .Calls}}· calls {{range .Calls}}<span class="status status-{{.}}">{{.}}</span>{{end}}{{end}}
{{if .Error}}· <span class="bad">{{.Error}}</span>{{end}}</div>
<pre>{{range .Segments}}{{if .Kind}}<span class="seg-{{.Kind}}">{{.Text}}</span>{{else}}{{.Text}}{{end}}{{end}}</pre>
</div>
{{end}}{{else}}<p class="muted">No trajectories yet (eval/&lt;stage&gt;.jsonl, rl/traces/).</p>{{end}}

{{if .Config}}<h2 id="config">Configuration</h2>
<details><summary>config.toml</summary><pre>{{.Config}}</pre></details>{{end}}
</body>
</html>
`
