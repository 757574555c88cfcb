package metrics_test

import (
	"fmt"

	"gorstar/eval/metrics"
)

// pass@k from n samples of which c are correct: the chance that k drawn without replacement hold at
// least one correct sample.
func ExamplePassAtK() {
	fmt.Printf("%.3f %.3f %.3f\n", metrics.PassAtK(16, 4, 1), metrics.PassAtK(16, 4, 4), metrics.PassAtK(16, 0, 8))
	// Output: 0.250 0.728 0.000
}
