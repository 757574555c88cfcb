package reward_test

import (
	"fmt"
	"os"
	"strings"

	"gorstar/reward"
)

// Grading a JSONL file of responses against their answers, as `gorstar reward grade` does: bad
// lines are named and left out, the rest graded on every core and written back with the grade.
func ExampleGradePairs() {
	in := `{"id": "p1", "response": "... so the total is <answer>\\boxed{27}</answer>", "answer": 27.0}
{"id": "p2", "response": "<answer>\\boxed{\\frac{1}{3}}</answer>", "answer": "0.25"}
{"id": "p3", "answer": "1"}
`
	pairs, bad, err := reward.ReadPairs(strings.NewReader(in), "pairs.jsonl", reward.Strict)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(bad)
	correct := reward.GradePairs(pairs, 0, nil)
	fmt.Printf("%d of %d correct\n", correct, len(pairs))
	if err := reward.WritePairs(os.Stdout, pairs); err != nil {
		fmt.Println(err)
	}
	// Output:
	// [pairs.jsonl:3: missing field "response"]
	// 1 of 2 correct
	// {"answer":27.0,"correct":true,"extracted":"27","id":"p1","reason":"equal as rationals","response":"... so the total is <answer>\\boxed{27}</answer>"}
	// {"answer":"0.25","correct":false,"extracted":"\\frac{1}{3}","id":"p2","reason":"different values","response":"<answer>\\boxed{\\frac{1}{3}}</answer>"}
}
