package metrics

import "math"

// PassAtK is the unbiased estimate of the chance that at least one of k samples drawn without
// replacement from n, of which c are correct, is correct: 1 − C(n−c, k)/C(n, k) (Chen et al.,
// 2021). It is computed as 1 − Π_{i=n−c+1}^{n} (1 − k/i), which never forms a binomial
// coefficient and so neither overflows nor loses precision for large n. Outside
// 1 ≤ k ≤ n, 0 ≤ c ≤ n it returns NaN.
func PassAtK(n, c, k int) float64 {
	if k < 1 || k > n || c < 0 || c > n {
		return math.NaN()
	}
	if n-c < k { // every k-subset holds a correct sample
		return 1
	}
	miss := 1.0
	for i := n - c + 1; i <= n; i++ {
		miss *= 1 - float64(k)/float64(i)
	}
	return 1 - miss
}

// PassAtKCurve returns pass@k for k = 1…n (index k−1) of one problem with c of n correct.
func PassAtKCurve(n, c int) []float64 {
	curve := make([]float64, n)
	for k := 1; k <= n; k++ {
		curve[k-1] = PassAtK(n, c, k)
	}
	return curve
}
