package data

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"gorstar/chat"
	"gorstar/internal/testenv"
	"gorstar/internal/testmodel"
)

// evalInt64 is an independent evaluator for small expressions: split on + and - into terms,
// each term a product.
func evalInt64(t *testing.T, expr string) int64 {
	t.Helper()
	fields := strings.Fields(expr)
	var sum, term int64
	sign := int64(1)
	term, _ = strconv.ParseInt(fields[0], 10, 64)
	for i := 1; i < len(fields); i += 2 {
		n, err := strconv.ParseInt(fields[i+1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		switch fields[i] {
		case "*":
			term *= n
		case "+", "-":
			sum += sign * term
			term, sign = n, 1
			if fields[i] == "-" {
				sign = -1
			}
		}
	}
	return sum + sign*term
}

func TestArithAnswersExact(t *testing.T) {
	for _, o := range []ArithOptions{
		DefaultArith(),
		{MinDigits: 1, MaxDigits: 4, Operands: 4, Ops: "+-*"},
		{MinDigits: 1, MaxDigits: 1, Operands: 2, Ops: "-"},
	} {
		gen, err := NewArith(o, 7)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2000; i++ {
			it := gen.Next()
			fields := strings.Fields(it.Expr)
			if len(fields) != 2*o.Operands-1 {
				t.Fatalf("%q: wrong number of operands", it.Expr)
			}
			for j := 0; j < len(fields); j += 2 {
				if d := len(fields[j]); d < o.MinDigits || d > o.MaxDigits || fields[j][0] == '0' {
					t.Fatalf("%q: operand %q has %d digits", it.Expr, fields[j], d)
				}
			}
			if want := strconv.FormatInt(evalInt64(t, it.Expr), 10); it.Answer != want {
				t.Fatalf("%s = %s, want %s", it.Expr, it.Answer, want)
			}
		}
	}
}

// Big operands are checked against Python's exact integers.
func TestArithAnswersAgainstPython(t *testing.T) {
	testenv.Short(t, "checks answers with python3")
	py := testenv.Python3(t)
	gen, _ := NewArith(ArithOptions{MinDigits: 15, MaxDigits: 30, Operands: 5, Ops: "+-*"}, 3)
	var exprs, answers []string
	for i := 0; i < 200; i++ {
		it := gen.Next()
		exprs = append(exprs, it.Expr)
		answers = append(answers, it.Answer)
	}
	cmd := exec.Command(py, "-c", "import sys\nfor l in sys.stdin: print(eval(l))")
	cmd.Stdin = strings.NewReader(strings.Join(exprs, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(out)); !reflect.DeepEqual(got, answers) {
		t.Fatalf("python disagrees:\n%v\n%v", got[:3], answers[:3])
	}
}

func TestArithSeeded(t *testing.T) {
	a, _ := NewArith(DefaultArith(), 5)
	b, _ := NewArith(DefaultArith(), 5)
	c, _ := NewArith(DefaultArith(), 6)
	same, diff := 0, 0
	for i := 0; i < 100; i++ {
		x, y, z := a.Next(), b.Next(), c.Next()
		if x != y {
			t.Fatalf("same seed, different items: %v %v", x, y)
		}
		if x.Expr == z.Expr {
			same++
		} else {
			diff++
		}
	}
	if diff < 95 {
		t.Errorf("seeds 5 and 6 agree on %d of 100 items", same)
	}
}

func TestArithConversationFormat(t *testing.T) {
	it := ArithItem{ID: "arith-1-1", Expr: "4821 * 739", Answer: "3562719"}
	c := it.Conversation()
	roles := []string{}
	for _, m := range c.Messages {
		roles = append(roles, m.Role)
	}
	// No system message: the template writes the one system turn.
	if want := []string{"user", "assistant", "tool", "assistant"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles %v", roles)
	}
	r, err := chat.NewRenderer(testmodel.Tokenizer(t), chat.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	text, err := r.Text(c.Messages, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(text, "<|im_start|>system") != 1 || strings.Count(text, "<tools>\n") != 1 ||
		strings.Count(text, `"required": ["code"]`) != 1 { // the schema once
		t.Errorf("rendered conversation has not exactly one system turn and one schema:\n%s", text)
	}
	wantCall := "<|im_start|>assistant\n<reason>Compute it exactly with Python.</reason>\n<tool_call>\n" +
		`{"name": "python", "arguments": {"code": "print(4821 * 739)", "input": ""}}` + "\n</tool_call><|im_end|>"
	if !strings.Contains(text, wantCall) {
		t.Errorf("rendered conversation lacks the call turn\n%q\nin\n%s", wantCall, text)
	}
	var args struct{ Code, Input *string }
	if err := json.Unmarshal(c.Messages[1].ToolCalls[0].Arguments, &args); err != nil || args.Code == nil ||
		*args.Code != "print(4821 * 739)" || args.Input == nil {
		t.Errorf("call arguments %s: %v", c.Messages[1].ToolCalls[0].Arguments, err)
	}
	if m := c.Messages[2]; m.Content != "3562719" || m.Name != "python" {
		t.Errorf("tool turn %+v", m)
	}
	final := c.Messages[3].Content
	if !strings.HasPrefix(final, "<reason>") || !strings.Contains(final, "</reason>") ||
		!strings.HasSuffix(final, `<answer>\boxed{3562719}</answer>`) {
		t.Errorf("final turn %q", final)
	}
	// The example itself (the system turn aside) is short enough for the tiny model's context.
	n := 0
	for _, m := range c.Messages {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Arguments)
		}
	}
	if n > 300 {
		t.Errorf("example body is %d bytes", n)
	}
	t.Logf("rendered %d bytes, the messages %d", len(text), n)
}

func TestSynthFiles(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	probs := filepath.Join(dir, "p.parquet")
	if _, err := Synth(ctx, SynthOptions{Task: "arith", N: 50, Out: probs, Seed: 1, Arith: DefaultArith()}); err != nil {
		t.Fatal(err)
	}
	ps, err := ReadAllProblems(probs)
	if err != nil || len(ps) != 50 {
		t.Fatalf("%d problems, %v", len(ps), err)
	}
	if ps[0].Source != "synth/arith" || !strings.HasPrefix(ps[0].Problem, "Compute ") || !json.Valid([]byte(ps[0].Meta)) {
		t.Errorf("%+v", ps[0])
	}
	convs := filepath.Join(dir, "c.parquet")
	if _, err := Synth(ctx, SynthOptions{Task: "arith", N: 20, Out: convs, SFT: true, Seed: 1, Arith: DefaultArith()}); err != nil {
		t.Fatal(err)
	}
	cs, err := ReadAllConversations(convs)
	if err != nil || len(cs) != 20 {
		t.Fatalf("%d conversations, %v", len(cs), err)
	}
	gen, _ := NewArith(DefaultArith(), 1)
	if want := gen.Next().Conversation(); !reflect.DeepEqual(cs[0], want) {
		t.Errorf("got %+v\nwant %+v", cs[0], want)
	}
	for _, bad := range []SynthOptions{
		{Task: "chess", N: 1, Out: filepath.Join(dir, "x.parquet"), Arith: DefaultArith()},
		{Task: "arith", N: 0, Out: filepath.Join(dir, "x.parquet"), Arith: DefaultArith()},
		{Task: "arith", N: 1, Out: filepath.Join(dir, "x.parquet"), Arith: ArithOptions{MinDigits: 3, MaxDigits: 2, Operands: 2, Ops: "*"}},
		{Task: "arith", N: 1, Out: filepath.Join(dir, "x.parquet"), Arith: ArithOptions{MinDigits: 1, MaxDigits: 2, Operands: 2, Ops: "/"}},
		{Task: "arith", N: 1, Out: filepath.Join(dir, "x.csv"), Arith: DefaultArith()},
	} {
		if _, err := Synth(ctx, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// A share of the SFT conversations shows a failed call and its correction, the same ones for
// a seed, with the answer of the plain conversation; masked, the failed call (a name never
// defined, no operand in it) has weight 0 and nothing else carries a weight; unmasked (the
// quickstart's), it misspells print around the expression and no message carries a weight.
func TestRecoveryConversations(t *testing.T) {
	ctx := context.Background()
	write := func(share float64, masked bool) []chat.Conversation {
		path := filepath.Join(t.TempDir(), "c.jsonl")
		if _, err := Synth(ctx, SynthOptions{Task: "arith", N: 100, Out: path, SFT: true, RecoveryShare: share,
			RecoveryMasked: masked, Seed: 5, Arith: DefaultArith()}); err != nil {
			t.Fatal(err)
		}
		convs, err := ReadAllConversations(path)
		if err != nil {
			t.Fatal(err)
		}
		return convs
	}
	plain := write(0, false)
	recovered := 0
	for _, masked := range []bool{false, true} {
		a, b := write(0.3, masked), write(0.3, masked)
		recovered = 0
		for i := range a {
			if !reflect.DeepEqual(a[i], b[i]) {
				t.Fatalf("conversation %d differs between two runs with the same seed", i)
			}
			last := a[i].Messages[len(a[i].Messages)-1].Content
			if last != plain[i].Messages[len(plain[i].Messages)-1].Content {
				t.Errorf("conversation %d: final answer %q, want the plain one's", i, last)
			}
			if len(a[i].Messages) == 6 {
				recovered++
				want := "NameError at line 1: name 'prnt' is not defined\n    prnt("
				if masked {
					want = "NameError at line 1: name 'result' is not defined\n    print(result)"
				}
				if tool := a[i].Messages[2].Content; !strings.HasPrefix(tool, want) {
					t.Errorf("masked %v, conversation %d: tool text %q", masked, i, tool)
				}
			}
			for k, m := range a[i].Messages {
				got, want := "none", "none"
				if m.Weight != nil {
					got = fmt.Sprint(*m.Weight)
				}
				if masked && len(a[i].Messages) == 6 && k == 1 {
					want = "0"
				}
				if got != want {
					t.Errorf("masked %v, conversation %d message %d (%s): weight %s, want %s", masked, i, k, m.Role, got, want)
				}
			}
		}
	}
	if recovered < 25 || recovered > 35 {
		t.Errorf("%d of 100 conversations recover, want about 30", recovered)
	}
	if _, err := Synth(ctx, SynthOptions{Task: "arith", N: 1, Out: filepath.Join(t.TempDir(), "x.jsonl"), SFT: true, RecoveryShare: 1.5, Arith: DefaultArith()}); err == nil {
		t.Error("recovery share 1.5 accepted")
	}
}

// --exclude keeps a held-out set disjoint even in a small space (1-digit products: 81 problems):
// no training problem or SFT conversation asks a held-out one; a space the exclusion empties is an
// error naming the file, not a hang.
func TestSynthExclude(t *testing.T) {
	dir := t.TempDir()
	one := ArithOptions{MinDigits: 1, MaxDigits: 1, Operands: 2, Ops: "*"}
	held := filepath.Join(dir, "held.jsonl")
	if _, err := Synth(context.Background(), SynthOptions{Task: "arith", N: 40, Out: held, Seed: 2, Arith: one}); err != nil {
		t.Fatal(err)
	}
	heldOut, err := problemTexts(held)
	if err != nil || len(heldOut) < 10 {
		t.Fatalf("%d held-out texts, err %v", len(heldOut), err)
	}
	for _, sft := range []bool{false, true} {
		out := filepath.Join(dir, fmt.Sprintf("train-%v.jsonl", sft))
		if _, err := Synth(context.Background(), SynthOptions{Task: "arith", N: 300, Out: out, SFT: sft, Seed: 1, Arith: one, Exclude: held}); err != nil {
			t.Fatal(err)
		}
		got, err := problemTexts(out)
		if err != nil {
			t.Fatal(err)
		}
		for text := range got {
			if heldOut[text] {
				t.Errorf("sft=%v: %q is held out", sft, text)
			}
		}
		if len(got)+len(heldOut) > 81 || len(got) < 81-len(heldOut)-5 {
			t.Errorf("sft=%v: %d distinct problems besides %d held out (81 exist)", sft, len(got), len(heldOut))
		}
	}
	all := filepath.Join(dir, "all.jsonl")
	if _, err := Synth(context.Background(), SynthOptions{Task: "arith", N: 2000, Out: all, Seed: 3, Arith: one}); err != nil {
		t.Fatal(err)
	}
	_, err = Synth(context.Background(), SynthOptions{Task: "arith", N: 5, Out: filepath.Join(dir, "x.jsonl"), Seed: 1, Arith: one, Exclude: all})
	if err == nil || !strings.Contains(err.Error(), "outside "+all) {
		t.Errorf("err = %v, want one naming %s", err, all)
	}
}
