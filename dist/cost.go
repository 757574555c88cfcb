package dist

// AllReduceSeconds is the time a ring all-reduce of bytes takes between ranks over links of
// gbps gigabits per second, from its traffic alone: each rank sends (and receives) 2(N−1)/N of
// the buffer (a reduce-scatter, then an all-gather). ranks ≤ 0 gives the many-rank bound, 2 ×
// the buffer. Latency and the sums' arithmetic are left out: for gradient-sized buffers the
// bytes dominate.
func AllReduceSeconds(bytes int64, ranks int, gbps float64) float64 {
	share := 2.0
	if ranks > 0 {
		share = 2 * float64(ranks-1) / float64(ranks)
	}
	return share * float64(bytes) * 8 / (gbps * 1e9)
}
