package rl_test

import (
	"fmt"

	"gorstar/rl"
)

// A group of four rollouts of one problem, two correct: the advantages are the rewards'
// deviations from the group's mean over its sample standard deviation.
func ExampleGroupAdvantages() {
	fmt.Printf("%.3f\n", rl.GroupAdvantages([]float64{1, 0, 0, 1}))
	// Equal rewards teach nothing: every advantage is 0.
	fmt.Println(rl.GroupAdvantages([]float64{1, 1, 1}))
	// Output:
	// [0.866 -0.866 -0.866 0.866]
	// [0 0 0]
}
