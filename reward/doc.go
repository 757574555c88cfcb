// Package reward grades a model's final answer against a reference answer: the learning signal of
// GRPO-RoC and the scorer of evaluation.
//
// Grading has two halves. Extraction (ExtractAnswer) finds the final answer in a multi-turn
// response: the last \boxed{} inside the last <answer> block, else the last \boxed{} anywhere in
// the model's own text (tool calls and tool responses never count), else an "answer is X" phrase.
// Equivalence (Equivalent) parses both answers into structures (numbers, expressions, sets,
// tuples, intervals, matrices, equations, text) and compares them exactly: numbers are rationals
// (math/big), radicals and π stay symbolic, expressions in variables are expanded into a canonical
// polynomial form, and past a work bound they are compared by exact evaluation at fixed rational
// points.
//
// Mode Strict (the default) is what gorstar trains with. Mode RStar2 reproduces the leniencies of
// the rStar2-Agent release (box anywhere, tool responses included; ×100, ÷100 and 1e-4 relative
// error accepted for numbers; truncation ignored) so runs can be compared with published numbers.
//
// Every call does bounded work (input length, exponent, factorial, term and bit caps, and an
// operation budget) and mutates no shared state, so Grade is safe for concurrent use.
package reward
