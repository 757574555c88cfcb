package model

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"gorstar/tokenizer"
)

func byteTokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.ByteLevelChat()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// The warm-up rows are whole "#digits filler=digits." examples; exactly the copies after '=' are
// in the loss, and their weights sum to 1.
func TestCopyRows(t *testing.T) {
	tok := byteTokenizer(t)
	b, err := copyRows(rand.New(rand.NewPCG(1, 2)), tok, 4, 64, 0)
	if err != nil {
		t.Fatal(err)
	}
	example := regexp.MustCompile(`#([0-9]{1,8})[^0-9#=]{0,40}=([0-9]+)\.`)
	sum := 0.0
	for r := 0; r < b.B; r++ {
		ids, w := b.IDs[r*b.L:(r+1)*b.L], b.Weights[r*b.L:(r+1)*b.L]
		end := len(ids)
		for end > 0 && ids[end-1] == 0 {
			end--
		}
		text := tok.Decode(ids[:end])
		var weighted strings.Builder
		for i := range ids {
			if w[i] > 0 {
				weighted.WriteString(tok.Decode(ids[i : i+1]))
				sum += float64(w[i])
			}
		}
		var copies strings.Builder
		rest := text
		for rest != "" {
			m := example.FindStringSubmatchIndex(rest)
			if m == nil || m[0] != 0 {
				t.Fatalf("row %d: %q is not whole examples (at %q)", r, text, rest)
			}
			src, dst := rest[m[2]:m[3]], rest[m[4]:m[5]]
			if src != dst {
				t.Errorf("row %d: copy %q of %q", r, dst, src)
			}
			copies.WriteString(dst + ".")
			rest = rest[m[1]:]
		}
		if weighted.String() != copies.String() {
			t.Errorf("row %d: weighted tokens %q, want the copies %q", r, weighted.String(), copies.String())
		}
	}
	if math.Abs(sum-1) > 1e-5 {
		t.Errorf("weights sum to %g, want 1", sum)
	}
}
