package data

import (
	"hash/fnv"
	"strings"
	"unicode"
)

// normalizedWords lowercases text and splits it into runs of letters and digits; everything else
// (spaces, punctuation, LaTeX backslashes and braces) separates words. Two problems that differ
// only in spacing, case or markup punctuation have the same words.
func normalizedWords(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// hashWords hashes a word sequence (FNV-1a, words separated by a byte that cannot occur in them).
func hashWords(words []string) uint64 {
	h := fnv.New64a()
	for _, w := range words {
		h.Write([]byte(w))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// textKey identifies a problem up to normalization, for deduplication.
func textKey(text string) uint64 { return hashWords(normalizedWords(text)) }

// ngramHashes returns the hashes of every n-word window of the normalized text; a text shorter than
// n words yields one hash of all its words, so short problems are still compared whole.
func ngramHashes(text string, n int) []uint64 {
	words := normalizedWords(text)
	if len(words) == 0 {
		return nil
	}
	if len(words) < n {
		return []uint64{hashWords(words)}
	}
	out := make([]uint64, 0, len(words)-n+1)
	for i := 0; i+n <= len(words); i++ {
		out = append(out, hashWords(words[i:i+n]))
	}
	return out
}
