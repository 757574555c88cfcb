package metrics

// MajorityVote returns the most frequent answer among one problem's samples after normalize (the
// caller's canonical form, e.g. reward.Canonical; nil compares answers as they are), and the
// index of the first sample that gave it, whose correctness is the vote's. Answers that normalize
// to "" (no answer extracted) do not vote. Ties go to the answer that appeared first, so the result
// depends only on the order of answers. ok is false when no sample voted.
func MajorityVote(answers []string, normalize func(string) string) (winner string, first int, ok bool) {
	count := map[string]int{}
	firstSeen := map[string]int{}
	best := 0
	for i, a := range answers {
		if normalize != nil {
			a = normalize(a)
		}
		if a == "" {
			continue
		}
		if _, seen := firstSeen[a]; !seen {
			firstSeen[a] = i
		}
		count[a]++
		if n := count[a]; n > best || (n == best && firstSeen[a] < firstSeen[winner]) {
			winner, best = a, n
		}
	}
	if best == 0 {
		return "", 0, false
	}
	return winner, firstSeen[winner], true
}
