package suggest

import (
	"math/rand/v2"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2},
		{"rl.lrr", "rl.lr", 1}, {"evl", "eval", 1}, {"max_tokens", "max_turns", 3}, {"same", "same", 0},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// Against a recursive definition on random short strings: symmetric, and each edit costs one.
func TestDistanceMatchesRecursion(t *testing.T) {
	var ref func(a, b string) int
	ref = func(a, b string) int {
		switch {
		case a == "":
			return len(b)
		case b == "":
			return len(a)
		case a[0] == b[0]:
			return ref(a[1:], b[1:])
		}
		return 1 + min(ref(a[1:], b), ref(a, b[1:]), ref(a[1:], b[1:]))
	}
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = "abc"[r.IntN(3)]
		}
		return string(b)
	}
	for range 500 {
		a, b := word(), word()
		if got, want := Distance(a, b), ref(a, b); got != want || Distance(b, a) != got {
			t.Fatalf("Distance(%q, %q) = %d (reversed %d), want %d", a, b, got, Distance(b, a), want)
		}
	}
}

func TestNear(t *testing.T) {
	if !Near("evl", 2) || Near("evl", 3) || !Near("max_response_tokens", 6) || Near("max_response_tokens", 7) {
		t.Error("Near: threshold is max(2, len/3)")
	}
}
