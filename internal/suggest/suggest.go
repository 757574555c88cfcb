// Package suggest finds what a mistyped name probably meant — a config key, a command — for the
// "did you mean" of an error message.
package suggest

// Distance is the Levenshtein distance between a and b, in bytes: the fewest insertions,
// deletions and substitutions that turn one into the other.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Near reports whether a name at distance d from typed is close enough to suggest: at most 2
// edits, or a third of typed's length for a long one.
func Near(typed string, d int) bool {
	return d <= max(2, len(typed)/3)
}
