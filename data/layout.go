package data

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"gorstar/internal/usererr"
	"gorstar/reward"
)

// A layout is the published file layout of one public evaluation set: the columns that identify it
// and how a row of it becomes a problem. Layouts are what `data import --format NAME` names, and
// what `auto` recognizes from a file's columns, so the files that evaluation repositories ship
// (Qwen2.5-Math's evaluation/data, math-evaluation-harness, openai/grade-school-math, the Hugging
// Face copies in Parquet) import without code.
type layout struct {
	name   string
	source string // the set's name ("" = taken from the path)
	// need lists the columns the mapping reads; auto also wants the columns in mark and none in
	// without. sniff, when set, checks the first row's values too (for layouts whose columns
	// alone are too common).
	need, mark, without []string
	sniff               func(row map[string]json.RawMessage) bool
	idCol               string
	problemCols         []string // the columns the problem is made of (kept out of meta)
	problem             func(row map[string]json.RawMessage) string
	// answer returns the reference answer; "" skips the row as having none.
	answer func(row map[string]json.RawMessage) string
	// sourceOf derives the set's name from a row (a URL or id naming the contest), "" when it cannot.
	sourceOf func(row map[string]json.RawMessage) string
}

// layouts in the order auto tries them: the more specific first.
var layouts = []layout{
	{
		name: "gsm8k", source: "gsm8k", need: []string{"question", "answer"}, without: []string{"problem"},
		sniff:       func(r map[string]json.RawMessage) bool { return strings.Contains(field(r, "answer"), "####") },
		problemCols: []string{"question"},
		problem:     col("question"), answer: gsm8kAnswer,
	},
	{
		name: "olympiadbench", source: "olympiadbench", need: []string{"question", "final_answer"}, idCol: "id",
		problemCols: []string{"question", "context"},
		problem:     olympiadProblem, answer: listAnswer("final_answer"),
	},
	{
		name: "math500", source: "math500", need: []string{"problem", "answer"}, mark: []string{"solution", "unique_id"}, idCol: "unique_id",
		problemCols: []string{"problem"},
		problem:     col("problem"), answer: numberAnswer("answer"),
	},
	{
		name: "math", source: "math", need: []string{"problem", "solution"}, mark: []string{"level", "type"}, without: []string{"answer"},
		problemCols: []string{"problem"},
		problem:     col("problem"), answer: boxedAnswer("solution"),
	},
	{
		name: "minerva", source: "minerva", need: []string{"problem", "solution"}, mark: []string{"type"}, without: []string{"answer", "level"},
		problemCols: []string{"problem"},
		problem:     col("problem"), answer: boxedAnswer("solution"),
	},
	{
		name: "svamp", source: "svamp", need: []string{"Body", "Question", "Answer"}, idCol: "ID",
		problemCols: []string{"Body", "Question"},
		problem:     joinedProblem("Body", "Question"), answer: numberAnswer("Answer"),
	},
	{
		name: "asdiv", source: "asdiv", need: []string{"body", "question", "answer"},
		problemCols: []string{"body", "question"},
		problem:     joinedProblem("body", "question"), answer: asdivAnswer,
	},
	{
		name: "mawps", source: "mawps", need: []string{"input", "target"},
		problemCols: []string{"input"},
		problem:     col("input"), answer: numberAnswer("target"),
	},
	{
		// Qwen2.5-Math's aime24 and the AIME copies on Hugging Face: problem, answer and a URL to
		// the contest's page; the source is read from the URL (2024_AIME_I → aime24).
		name: "aime", need: []string{"problem", "answer"}, mark: []string{"url"}, idCol: "id",
		sniff:       func(r map[string]json.RawMessage) bool { return contestFromURL(field(r, "url")) != "" },
		problemCols: []string{"problem"},
		problem:     col("problem"), answer: numberAnswer("answer"),
		sourceOf: func(r map[string]json.RawMessage) string { return contestFromURL(field(r, "url")) },
	},
	{
		// The capitalized AIME layout (ID "2024-I-1", Problem, Solution, Answer).
		name: "aime-caps", need: []string{"Problem", "Answer"}, mark: []string{"ID"}, idCol: "ID",
		problemCols: []string{"Problem"},
		problem:     col("Problem"), answer: numberAnswer("Answer"),
		sourceOf: func(r map[string]json.RawMessage) string { return aimeFromID(field(r, "ID")) },
	},
}

// layoutAliases are --format names that pick a layout under another name: the same columns.
var layoutAliases = map[string]string{
	"amc": "aime", "aime24": "aime", "aime25": "aime", "amc23": "aime",
	"minerva_math": "minerva", "ocw": "minerva", "math-500": "math500", "gsm": "gsm8k",
}

// LayoutNames lists the --format names of the public evaluation layouts.
func LayoutNames() []string {
	names := []string{}
	for _, l := range layouts {
		if l.name != "aime-caps" {
			names = append(names, l.name)
		}
	}
	return append(names, "amc")
}

// layoutByName returns the layout a --format name picks, nil when the name is no layout.
func layoutByName(name string) *layout {
	if a, ok := layoutAliases[name]; ok {
		name = a
	}
	for i := range layouts {
		if layouts[i].name == name {
			return &layouts[i]
		}
	}
	return nil
}

// matches reports whether a file with these columns (and this first row, when known) has layout l.
func (l *layout) matches(has func(string) bool, first map[string]json.RawMessage) bool {
	for _, c := range append(l.need[:len(l.need):len(l.need)], l.mark...) {
		if !has(c) {
			return false
		}
	}
	for _, c := range l.without {
		if has(c) {
			return false
		}
	}
	return l.sniff == nil || first == nil || l.sniff(first)
}

// detectLayout returns the first layout the columns match; nil when none does.
func detectLayout(has func(string) bool, first map[string]json.RawMessage) *layout {
	for i := range layouts {
		if layouts[i].matches(has, first) {
			return &layouts[i]
		}
	}
	return nil
}

// checkColumns is the user error for --format NAME on a file without the layout's columns.
func (l *layout) checkColumns(where string, has func(string) bool, found string) error {
	var missing []string
	for _, c := range l.need {
		if !has(c) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return usererr.New("%s: --format %s needs the columns %s; missing %s (columns found: %s)",
		where, l.name, strings.Join(l.need, ", "), strings.Join(missing, ", "), found)
}

// mapRow turns one row of the layout into a problem; source is the name for rows whose layout
// does not name its set.
func (l *layout) mapRow(r map[string]json.RawMessage, source string) importedRow {
	row := importedRow{}
	row.Problem.Problem = strings.TrimSpace(l.problem(r))
	row.Answer = strings.TrimSpace(l.answer(r))
	if l.idCol != "" {
		row.ID = field(r, l.idCol)
	}
	row.Source = source
	if l.source != "" {
		row.Source = l.source
	}
	if l.sourceOf != nil {
		if s := l.sourceOf(r); s != "" {
			row.Source = s
		}
	}
	return row
}

// field reads a value as text ("" when absent or null).
func field(r map[string]json.RawMessage, name string) string {
	s, _ := jsonText(r[name])
	return s
}

func col(name string) func(map[string]json.RawMessage) string {
	return func(r map[string]json.RawMessage) string { return field(r, name) }
}

// joinedProblem is SVAMP's and ASDiv's problem: the body (the facts), then the question. A body
// without closing punctuation gets a full stop, as the sets' own evaluation code adds.
func joinedProblem(body, question string) func(map[string]json.RawMessage) string {
	return func(r map[string]json.RawMessage) string {
		b, q := strings.TrimSpace(field(r, body)), strings.TrimSpace(field(r, question))
		if b == "" {
			return q
		}
		if !strings.HasSuffix(b, ".") && !strings.HasSuffix(b, "?") && !strings.HasSuffix(b, "!") {
			b += "."
		}
		return b + " " + q
	}
}

// gsm8kAnswer is what follows the last "####" of GSM8K's rationale, thousands separators dropped
// (1,600 → 1600): a bare comma in a reference is otherwise a list.
func gsm8kAnswer(r map[string]json.RawMessage) string {
	s := field(r, "answer")
	i := strings.LastIndex(s, "####")
	if i < 0 {
		return ""
	}
	return dropThousands(strings.TrimSpace(s[i+4:]))
}

var thousandsRE = regexp.MustCompile(`^-?[1-9]\d{0,2}(,\d{3})+(\.\d+)?$`)

func dropThousands(s string) string {
	if thousandsRE.MatchString(s) {
		return strings.ReplaceAll(s, ",", "")
	}
	return s
}

// boxedAnswer is MATH's and Minerva's answer: the last \boxed{} of the worked solution.
func boxedAnswer(name string) func(map[string]json.RawMessage) string {
	return func(r map[string]json.RawMessage) string {
		box, _ := reward.LastBox(field(r, name))
		return box
	}
}

// numberAnswer reads an answer that may be a JSON number: 27.0 becomes 27.
func numberAnswer(name string) func(map[string]json.RawMessage) string {
	return func(r map[string]json.RawMessage) string { return answerText(r[name]) }
}

// answerText is a value as answer text: JSON numbers through reward.NumberAnswer (27.0 → 27).
func answerText(raw json.RawMessage) string {
	s, ok := jsonText(raw)
	if !ok {
		return ""
	}
	if t := strings.TrimSpace(string(raw)); t != "" && (t[0] == '-' || t[0] >= '0' && t[0] <= '9') {
		if n, ok := reward.NumberAnswer(t); ok {
			return n
		}
	}
	return s
}

// listAnswer reads OlympiadBench's final_answer: a list whose one element is the answer (its
// math delimiters dropped: "$69$,$84$" → "69,84"); a longer list is a set answer, its elements
// joined by commas.
func listAnswer(name string) func(map[string]json.RawMessage) string {
	return func(r map[string]json.RawMessage) string {
		var items []json.RawMessage
		if json.Unmarshal(r[name], &items) != nil {
			return dropMathDelimiters(answerText(r[name]))
		}
		parts := make([]string, 0, len(items))
		for _, it := range items {
			if s := dropMathDelimiters(answerText(it)); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ", ")
	}
}

// dropMathDelimiters removes the $ that open and close math mode (not an escaped \$).
func dropMathDelimiters(s string) string {
	if !strings.Contains(s, "$") {
		return strings.TrimSpace(s)
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '$' && (i == 0 || s[i-1] != '\\') {
			continue
		}
		b.WriteByte(s[i])
	}
	return strings.TrimSpace(b.String())
}

// olympiadProblem is OlympiadBench's question, after its shared context when a row has one.
func olympiadProblem(r map[string]json.RawMessage) string {
	q := field(r, "question")
	if c := strings.TrimSpace(field(r, "context")); c != "" {
		return c + "\n\n" + q
	}
	return q
}

// asdivUnit is ASDiv's unit in parentheses after a number: "107 (ft)".
var asdivUnit = regexp.MustCompile(`\s*\([^()]*\)`)

// asdivAnswer drops ASDiv's units ("107 (ft)" → 107; "3 (apples); 4 (pears)" → "3; 4").
func asdivAnswer(r map[string]json.RawMessage) string {
	return strings.TrimSpace(asdivUnit.ReplaceAllString(answerText(r["answer"]), ""))
}

var (
	contestURL = regexp.MustCompile(`(?i)(\d{4})_(AIME|AMC_?\d*|HMMT)`)
	aimeID     = regexp.MustCompile(`^(\d{4})-I`)
)

// contestFromURL names the contest of an Art of Problem Solving URL: ".../2024_AIME_I_Problems/…"
// → aime24, ".../2023_AMC_12A_Problems/…" → amc23.
func contestFromURL(u string) string {
	m := contestURL.FindStringSubmatch(u)
	if m == nil {
		return ""
	}
	kind := strings.ToLower(m[2])
	switch {
	case strings.HasPrefix(kind, "amc"):
		kind = "amc"
	case kind == "hmmt":
	default:
		kind = "aime"
	}
	return kind + m[1][2:]
}

// aimeFromID reads "2024-I-1" as aime24.
func aimeFromID(id string) string {
	if m := aimeID.FindStringSubmatch(id); m != nil {
		return "aime" + m[1][2:]
	}
	return ""
}

// describeLayouts is the hint in a message about a file no column mapping fits.
func describeLayouts() string {
	return fmt.Sprintf("--format %s, or --problem-col/--answer-col", strings.Join(LayoutNames(), "|"))
}
