package reward_test

import (
	"fmt"

	"gorstar/reward"
)

func ExampleGrade() {
	response := `<reason>…</reason><answer>The answer is \boxed{\frac{1}{2}}.</answer>`
	r := reward.Grade(response, "0.5", reward.Options{})
	fmt.Println(r.Correct, r.Extracted)

	// rStar2 mode reproduces the release's leniencies, e.g. a percentage read as ×100.
	for _, mode := range []reward.Mode{reward.Strict, reward.RStar2} {
		r := reward.Grade(`<answer>\boxed{50}</answer>`, "0.5", reward.Options{Mode: mode})
		fmt.Println(mode, r.Correct)
	}
	// A response that ran out of its budget scores 0 in strict mode.
	fmt.Println(reward.Grade(response, "0.5", reward.Options{Truncated: true}).Correct)
	// Output:
	// true \frac{1}{2}
	// strict false
	// rstar2 true
	// false
}

func ExampleExtractAnswer() {
	answer, ok := reward.ExtractAnswer(`<tool_response>\boxed{7}</tool_response><answer>\boxed{42}</answer>`)
	fmt.Println(answer, ok)
	// Output: 42 true
}
