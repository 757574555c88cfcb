package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
)

// DefaultResamples is the number of bootstrap resamples a Summary draws unless told otherwise.
const DefaultResamples = 2000

// BootstrapMeanCI returns a percentile-bootstrap interval for the mean of values at the given
// level (0.95 for a 95% interval): the mean is recomputed on `resamples` resamples of values drawn
// with replacement, and the interval is the (1−level)/2 and (1+level)/2 quantiles of those means
// (linear interpolation between order statistics). The generator is seeded with seed, so the
// interval is reproducible. With no values it returns NaN, NaN; with resamples < 1 or values all
// equal, the interval is the mean itself.
//
// Resampling problems (not samples) treats the problem set as the draw from a population, which
// is the uncertainty that matters when two models are compared on the same benchmark.
func BootstrapMeanCI(values []float64, level float64, resamples int, seed uint64) (lo, hi float64) {
	if len(values) == 0 {
		return math.NaN(), math.NaN()
	}
	if resamples < 1 {
		m := mean(values)
		return m, m
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(values))))
	means := make([]float64, resamples)
	for r := range means {
		sum := 0.0
		for range values {
			sum += values[rng.IntN(len(values))]
		}
		means[r] = sum / float64(len(values))
	}
	slices.Sort(means)
	return quantile(means, (1-level)/2), quantile(means, (1+level)/2)
}

// quantile interpolates linearly between the order statistics of sorted (R's type 7).
func quantile(sorted []float64, q float64) float64 {
	h := q * float64(len(sorted)-1)
	i := int(math.Floor(h))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	if i < 0 {
		return sorted[0]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
