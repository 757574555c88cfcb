package data

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"

	"gorstar/chat"
	"gorstar/internal/progress"
	"gorstar/internal/usererr"
)

// ArithOptions configure the arithmetic task: expressions of Operands integers of MinDigits to
// MaxDigits digits joined by operators drawn from Ops ("+", "-", "*", usual precedence).
type ArithOptions struct {
	MinDigits, MaxDigits int
	Operands             int
	Ops                  string
}

// DefaultArith is the quickstart setting: a product of two 3–4 digit numbers. A tiny model that
// answers directly is usually wrong; one that calls Python and copies the result is right.
func DefaultArith() ArithOptions {
	return ArithOptions{MinDigits: 3, MaxDigits: 4, Operands: 2, Ops: "*"}
}

// Validate names the first bad option.
func (o ArithOptions) Validate() error {
	switch {
	case o.MinDigits < 1 || o.MinDigits > 40:
		return usererr.New("arith: min digits must be in [1, 40], got %d", o.MinDigits)
	case o.MaxDigits < o.MinDigits || o.MaxDigits > 40:
		return usererr.New("arith: max digits must be in [%d, 40], got %d", o.MinDigits, o.MaxDigits)
	case o.Operands < 2 || o.Operands > 8:
		return usererr.New("arith: operands must be in [2, 8], got %d", o.Operands)
	case o.Ops == "" || strings.Trim(o.Ops, "+-*") != "":
		return usererr.New("arith: ops must be a non-empty subset of \"+-*\", got %q", o.Ops)
	}
	return nil
}

// Arith generates arithmetic problems from a seeded random stream: the same seed and options
// give the same problems.
type Arith struct {
	opts ArithOptions
	rng  *rand.Rand
	seed int64
	n    int
}

// NewArith starts a generator.
func NewArith(o ArithOptions, seed int64) (*Arith, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Arith{opts: o, rng: rand.New(rand.NewPCG(uint64(seed), 0xa417)), seed: seed}, nil
}

// ArithItem is one generated expression with its exact value.
type ArithItem struct {
	ID     string
	Expr   string // e.g. "4821 * 739"
	Answer string // exact integer
}

// Next generates the next expression.
func (a *Arith) Next() ArithItem {
	a.n++
	nums := make([]*big.Int, a.opts.Operands)
	ops := make([]byte, a.opts.Operands-1)
	var expr strings.Builder
	for i := range nums {
		nums[i] = a.number()
		if i > 0 {
			ops[i-1] = a.opts.Ops[a.rng.IntN(len(a.opts.Ops))]
			expr.WriteString(" " + string(ops[i-1]) + " ")
		}
		expr.WriteString(nums[i].String())
	}
	return ArithItem{
		ID:     fmt.Sprintf("arith-%d-%d", a.seed, a.n),
		Expr:   expr.String(),
		Answer: evalArith(nums, ops).String(),
	}
}

// number draws the digit count uniformly, then a number with exactly that many digits.
func (a *Arith) number() *big.Int {
	d := a.opts.MinDigits + a.rng.IntN(a.opts.MaxDigits-a.opts.MinDigits+1)
	lo := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d-1)), nil)
	if d == 1 {
		lo.SetInt64(1)
	}
	hi := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil)
	span := new(big.Int).Sub(hi, lo)
	// Draw span uniformly from 64-bit words (span < 10^40 < 2^133, three words suffice).
	r := new(big.Int)
	for range 3 {
		r.Lsh(r, 64)
		r.Or(r, new(big.Int).SetUint64(a.rng.Uint64()))
	}
	return r.Mod(r, span).Add(r, lo)
}

// evalArith evaluates nums joined by ops with * binding tighter than + and -.
func evalArith(nums []*big.Int, ops []byte) *big.Int {
	sum := new(big.Int)
	term := new(big.Int).Set(nums[0])
	sign := 1
	for i, op := range ops {
		if op == '*' {
			term.Mul(term, nums[i+1])
			continue
		}
		if sign < 0 {
			term.Neg(term)
		}
		sum.Add(sum, term)
		term = new(big.Int).Set(nums[i+1])
		sign = 1
		if op == '-' {
			sign = -1
		}
	}
	if sign < 0 {
		term.Neg(term)
	}
	return sum.Add(sum, term)
}

// Problem is the item as a problems-table row.
func (it ArithItem) Problem(o ArithOptions) Problem {
	return Problem{
		ID:      it.ID,
		Problem: "Compute " + it.Expr + ".",
		Answer:  it.Answer,
		Source:  "synth/arith",
		Meta:    fmt.Sprintf(`{"digits":[%d,%d],"operands":%d,"ops":%q}`, o.MinDigits, o.MaxDigits, o.Operands, o.Ops),
	}
}

// Conversation is the item as an SFT example of the tool-call format: the problem, an assistant
// turn that calls Python, the tool's output, and the final answer. It has no system message: the
// chat template writes the system turn (instructions and chat.PythonTool's schema), the same one
// that RL, evaluation and serve prompts get.
func (it ArithItem) Conversation() chat.Conversation {
	return chat.Conversation{ID: it.ID, Messages: []chat.Message{
		{Role: chat.RoleUser, Content: "Compute " + it.Expr + "."},
		{Role: chat.RoleAssistant, Content: "<reason>Compute it exactly with Python.</reason>",
			ToolCalls: []chat.ToolCall{chat.PythonCall("print("+it.Expr+")", "")}},
		{Role: chat.RoleTool, Name: chat.PythonToolName, Content: it.Answer},
		{Role: chat.RoleAssistant, Content: "<reason>Python printed " + it.Answer + ".</reason>\n<answer>\\boxed{" + it.Answer + "}</answer>"},
	}}
}

// RecoveryConversation is the item as an SFT example of recovering from a failed call: a first
// call fails, the tool answers with the sandbox's error for that code (exactly what
// pytool.Result.ToolText shows for it), and a second call gets the result.
//
// Unmasked (the quickstart's data): the first call misspells print around the expression and is in
// the loss like every turn. Masked: the first call prints a name it never defined and has weight 0,
// so the model sees it as context and learns the correction, not the mistake; it holds none of the
// problem's numbers, so the correction copies them from the problem as every other conversation
// does. Masking is what a real SFT set wants, but it removes the planted call's copy of the operands
// from the loss, and the quickstart's 101 SFT steps then stop short of the copy transition (held-out
// 2.5% instead of 17.5%, and RL finds no group with a correct sample): sft/README.md.
func (it ArithItem) RecoveryConversation(masked bool) chat.Conversation {
	name, bad, why, weight := "prnt", "prnt("+it.Expr+")", "Fix the name.", (*int)(nil)
	if masked {
		name, bad, why, weight = "result", "print(result)", "Print the expression itself.", chat.Weight(0)
	}
	return chat.Conversation{ID: it.ID, Messages: []chat.Message{
		{Role: chat.RoleUser, Content: "Compute " + it.Expr + "."},
		{Role: chat.RoleAssistant, Content: "<reason>Compute it exactly with Python.</reason>",
			ToolCalls: []chat.ToolCall{chat.PythonCall(bad, "")}, Weight: weight},
		{Role: chat.RoleTool, Name: chat.PythonToolName, Content: "NameError at line 1: name '" + name + "' is not defined\n    " + bad},
		{Role: chat.RoleAssistant, Content: "<reason>" + why + "</reason>",
			ToolCalls: []chat.ToolCall{chat.PythonCall("print("+it.Expr+")", "")}},
		{Role: chat.RoleTool, Name: chat.PythonToolName, Content: it.Answer},
		{Role: chat.RoleAssistant, Content: "<reason>Python printed " + it.Answer + ".</reason>\n<answer>\\boxed{" + it.Answer + "}</answer>"},
	}}
}

// recovers decides, from the item's position alone (a Weyl sequence, no draw from the
// generator's stream), whether conversation n shows a recovery: a share `share` of them, the
// same ones for a seed and share whatever else changes.
func recovers(n int, share float64) bool {
	const golden = 0.6180339887498949
	x := float64(n) * golden
	return x-float64(int(x)) < share
}

// SynthOptions configure Synth.
type SynthOptions struct {
	Task string // "arith"
	N    int
	Out  string
	SFT  bool // write conversations instead of problems
	// RecoveryShare is the share of SFT conversations whose first call fails and is corrected
	// (RecoveryConversation); 0 writes none.
	RecoveryShare float64
	// RecoveryMasked writes the failed call with weight 0 (RecoveryConversation).
	RecoveryMasked bool
	Seed           int64
	Arith          ArithOptions
	// Exclude names a problem table (or SFT conversations) whose problems must not be generated:
	// an expression it asks (up to case and spacing) is drawn again, so a held-out set stays
	// disjoint even when the task's space is small.
	Exclude  string
	Progress *progress.Bar
}

// Synth writes N generated problems (or, with SFT, conversations) to Out.
func Synth(ctx context.Context, o SynthOptions) (int, error) {
	if o.Task != "arith" {
		return 0, usererr.New("data synth: unknown task %q (tasks: arith)", o.Task)
	}
	if o.N < 1 {
		return 0, usererr.New("data synth: --n must be ≥ 1, got %d", o.N)
	}
	if o.RecoveryShare < 0 || o.RecoveryShare > 1 {
		return 0, usererr.New("data synth: recovery share must be in [0, 1], got %g", o.RecoveryShare)
	}
	gen, err := NewArith(o.Arith, o.Seed)
	if err != nil {
		return 0, err
	}
	excluded, err := problemTexts(o.Exclude)
	if err != nil {
		return 0, err
	}
	draws := 0
	next := func() (ArithItem, error) {
		for {
			it := gen.Next()
			if draws++; draws > 100*o.N+1000 {
				return it, usererr.New("data synth: %d draws left fewer than %d problems outside %s: widen the digits or operands", draws, o.N, o.Exclude)
			}
			if !excluded[SameText(it.Problem(o.Arith).Problem)] {
				return it, nil
			}
		}
	}
	if o.SFT {
		w, err := CreateConversations(o.Out)
		if err != nil {
			return 0, err
		}
		defer w.Abort()
		for i := 0; i < o.N; i++ {
			if i%1024 == 0 && ctx.Err() != nil {
				return i, ctx.Err()
			}
			it, err := next()
			if err != nil {
				return i, err
			}
			conv := it.Conversation()
			if recovers(i, o.RecoveryShare) {
				conv = it.RecoveryConversation(o.RecoveryMasked)
			}
			if err := w.Write(conv); err != nil {
				return i, err
			}
			o.Progress.Add(1)
		}
		o.Progress.Finish()
		return o.N, w.Close()
	}
	w, err := CreateProblems(o.Out)
	if err != nil {
		return 0, err
	}
	defer w.Abort()
	for i := 0; i < o.N; i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return i, ctx.Err()
		}
		it, err := next()
		if err != nil {
			return i, err
		}
		if err := w.Write(it.Problem(o.Arith)); err != nil {
			return i, err
		}
		o.Progress.Add(1)
	}
	o.Progress.Finish()
	return o.N, w.Close()
}

// SameText is a problem's text up to case and spacing: two problems with the same SameText ask
// the same question.
func SameText(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// problemTexts reads the problems of path (problems, or conversations' first user turns) as
// SameText keys; an empty path gives none.
func problemTexts(path string) (map[string]bool, error) {
	out := map[string]bool{}
	if path == "" {
		return out, nil
	}
	probs, perr := ReadAllProblems(path)
	if perr == nil {
		for _, p := range probs {
			out[SameText(p.Problem)] = true
		}
		return out, nil
	}
	convs, err := ReadAllConversations(path)
	if err != nil {
		return nil, perr
	}
	for _, c := range convs {
		for _, m := range c.Messages {
			if m.Role == "user" {
				out[SameText(m.Content)] = true
				break
			}
		}
	}
	return out, nil
}
