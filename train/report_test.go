package train

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"gorstar/internal/usererr"
)

func TestReportOfAFixtureRun(t *testing.T) {
	l := writeFixtureRun(t, filepath.Join(t.TempDir(), "quickstart"))
	path, err := WriteReport(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if path != l.Report() {
		t.Fatalf("wrote %s, want %s", path, l.Report())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	checkWellFormed(t, page)
	for _, spec := range append(append([]chartSpec{}, sftCharts...), rlCharts...) {
		if !strings.Contains(page, `id="chart-`+spec.ID+`"`) {
			t.Errorf("chart %s (%s) missing", spec.ID, spec.Title)
		}
	}
	if strings.Contains(page, "Not in this run") {
		t.Errorf("the fixture has every metric, yet the report lists some as absent")
	}
	// Stage boundaries: stage2 and stage3 start at RL steps 12.5 and 18.5 although their steps restart.
	for _, stage := range []string{"stage2", "stage3"} {
		if !strings.Contains(page, `class="marker-label">`+stage+`<`) {
			t.Errorf("no boundary marker for %s", stage)
		}
	}
	// The eval table lists the stages in the run's order.
	first, _, _ := strings.Cut(page, "<h3>Per benchmark</h3>")
	rows := regexp.MustCompile(`<tr><td>([^<]+)</td><td>([0-9.]+)%`).FindAllStringSubmatch(first, -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[1]+"="+r[2])
	}
	if want := "sft=21.0 stage1=38.0 stage2=55.0 stage3=72.0"; strings.Join(got, " ") != want {
		t.Errorf("eval table rows %v, want %s", got, want)
	}
	// The per-benchmark table in the paper's layout: a row per stage, a column per set.
	for _, want := range []string{"<h3>Per benchmark</h3>", "<tr><th>stage</th><th>aime24</th><th>math500</th></tr>",
		`<tr><td>sft</td><td>21.0% <span class="muted">[16.0%, 26.0%] · 40 × 4<br>`,
		`</td><td>82.0% <span class="muted">[77.0%, 87.0%] · 60 × 4<br>`} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, want := range []string{`class="seg-tool_call"`, `class="seg-tool_response"`, `class="seg-answer"`,
		`status-error`, "Held-out eval after stage3", "RL rollouts, stage3 (step-00000006.jsonl)"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "<img") || strings.Contains(page, "</pre></div>&lt;") {
		t.Errorf("hostile text reached the page as markup")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Errorf("hostile text is not shown escaped")
	}
	if strings.Contains(page, "http://") && !strings.Contains(page, `xmlns="http://www.w3.org/2000/svg"`) ||
		regexp.MustCompile(`(src|href)="https?:`).MatchString(page) {
		t.Errorf("the report fetches something from the network")
	}
}

// checkWellFormed parses the page as HTML and checks that every non-void element closes in
// order, and parses each inline SVG strictly as XML.
func checkWellFormed(t *testing.T, page string) {
	t.Helper()
	void := map[string]bool{"meta": true, "br": true, "img": true, "hr": true, "input": true, "link": true}
	var stack []string
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatalf("HTML: %v", z.Err())
			}
			break
		}
		name, _ := z.TagName()
		tag := string(name)
		switch {
		case tt == html.StartTagToken && !void[tag]:
			stack = append(stack, tag)
		case tt == html.EndTagToken:
			if len(stack) == 0 || stack[len(stack)-1] != tag {
				t.Fatalf("HTML: </%s> closes %v", tag, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		t.Fatalf("HTML: unclosed %v", stack)
	}
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1)
	if len(svgs) != len(sftCharts)+len(rlCharts) {
		t.Errorf("%d SVG charts, want %d", len(svgs), len(sftCharts)+len(rlCharts))
	}
	for i, s := range svgs {
		d := xml.NewDecoder(strings.NewReader(s))
		d.Strict = true
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("SVG %d is not well-formed XML: %v", i, err)
			}
		}
	}
}

func TestReportOfARunInProgress(t *testing.T) {
	dir := t.TempDir()
	l := Layout{Dir: dir}
	os.MkdirAll(l.SFT(), 0o755)
	writeJSONLines(t, l.SFTMetrics(), []map[string]any{{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}})
	r, err := BuildReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.SFTCharts) != 1 || len(r.RLCharts) != 0 || len(r.Evals) != 0 || len(r.Samples) != 0 {
		t.Fatalf("charts %d/%d, evals %d, samples %d", len(r.SFTCharts), len(r.RLCharts), len(r.Evals), len(r.Samples))
	}
	if len(r.Absent) != 1+len(rlCharts) {
		t.Errorf("absent %v", r.Absent)
	}
	var b strings.Builder
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	checkWellFormedSome(t, b.String())
}

// checkWellFormedSome is checkWellFormed without the count of charts.
func checkWellFormedSome(t *testing.T, page string) {
	t.Helper()
	if !strings.HasSuffix(strings.TrimSpace(page), "</html>") || !strings.Contains(page, "No RL metrics yet") {
		t.Errorf("unexpected page:\n%s", page)
	}
}

func TestReportBadInputs(t *testing.T) {
	cases := []struct {
		name, file, content, want string
	}{
		{"metrics not JSON", "sft/metrics.jsonl", "{\"step\": 1, \"loss\": 1}\nnot json\n", "metrics.jsonl:2: not a JSON object"},
		{"metrics without step", "rl/metrics.jsonl", "{\"stage\": \"s1\", \"reward_mean\": 0.5}\n", "metrics.jsonl:1: field step"},
		{"eval summary not JSON", "eval/sft.json", "[1,", "sft.json: not an eval summary"},
		{"traces not JSON", "eval/sft.jsonl", "{", "sft.jsonl:1: not a trajectory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, c.file)
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, []byte(c.content), 0o644)
			if c.file == "eval/sft.jsonl" {
				os.WriteFile(filepath.Join(dir, "eval", "sft.json"), []byte(`{"avg_pass@1": 0.5}`), 0o644)
			}
			_, err := WriteReport(dir)
			if err == nil || !usererr.Is(err) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("want one-line user error containing %q, got %v", c.want, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "report.html")); err == nil {
				t.Errorf("a failed report left report.html behind")
			}
		})
	}
	if _, err := WriteReport(filepath.Join(t.TempDir(), "missing")); err == nil || !usererr.Is(err) {
		t.Errorf("missing run dir: %v", err)
	}
}

func TestSegmentText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain", "[plain]"},
		{"a<tool_call>x</tool_call>b", "[a][tool_call:<tool_call>x</tool_call>][b]"},
		{"<tool_response>r</tool_response><answer>7</answer>", "[tool_response:<tool_response>r</tool_response>][answer:<answer>7</answer>]"},
		{"x<answer>unclosed", "[x][answer:<answer>unclosed]"},
		{"", ""},
	}
	for _, c := range cases {
		var b strings.Builder
		for _, s := range segmentText(c.in) {
			if s.Kind != "" {
				fmt.Fprintf(&b, "[%s:%s]", s.Kind, s.Text)
			} else {
				fmt.Fprintf(&b, "[%s]", s.Text)
			}
		}
		if b.String() != c.want {
			t.Errorf("segmentText(%q) = %s, want %s", c.in, b.String(), c.want)
		}
	}
}

func TestStepsThatRestartContinueOnOneAxis(t *testing.T) {
	cases := []struct {
		name        string
		rows        []map[string]any
		xs, markers string
	}{
		{"per-stage steps", []map[string]any{{"stage": "a", "step": 1}, {"stage": "a", "step": 2},
			{"stage": "b", "step": 1}, {"stage": "b", "step": 2}, {"stage": "c", "step": 1}},
			"[1 2 3 4 5]", "[{1 a} {2.5 b} {4.5 c}]"},
		{"global steps", []map[string]any{{"stage": "a", "step": 1}, {"stage": "a", "step": 2},
			{"stage": "b", "step": 3}, {"stage": "b", "step": 4}},
			"[1 2 3 4]", "[{1 a} {2.5 b}]"},
		{"one stage", []map[string]any{{"step": 0}, {"step": 1}}, "[0 1]", "[]"},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "m.jsonl")
		writeJSONLines(t, path, c.rows)
		rows, err := readMetricRows(path, "rl")
		if err != nil {
			t.Fatal(err)
		}
		var xs []float64
		for _, r := range rows {
			xs = append(xs, r.X)
		}
		if fmt.Sprint(xs) != c.xs {
			t.Errorf("%s: x = %v, want %s", c.name, xs, c.xs)
		}
		if ms := fmt.Sprint(stageMarkers(rows)); ms != c.markers {
			t.Errorf("%s: markers %v, want %s", c.name, ms, c.markers)
		}
	}
}
