package reward

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var knownKinds = map[string]bool{
	"integer": true, "rational": true, "decimal": true, "expression": true, "set": true, "tuple": true,
	"interval": true, "matrix": true, "equation": true, "text": true, "empty": true,
}

// FuzzAnswer feeds arbitrary answers to the parser and the comparison: nothing may panic, Kind
// must name a known kind, and a number must be equivalent to itself and to its canonical key.
// The corpus found so far is kept in testdata/fuzz/FuzzAnswer.
func FuzzAnswer(f *testing.F) {
	for _, tc := range equivCases {
		f.Add(tc.got, tc.ref)
	}
	for _, a := range adversarialInputs {
		if len(a) < 200 {
			f.Add(a, "1")
		}
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		kind := Kind(a)
		if !knownKinds[kind] {
			t.Fatalf("Kind(%q) = %q", a, kind)
		}
		Equivalent(a, b, Options{})
		Equivalent(a, b, Options{Mode: RStar2})
		key := Canonical(a)
		switch kind {
		case "integer", "rational", "decimal":
			if !Equivalent(a, a, Options{}) {
				t.Fatalf("%q (%s) is not equivalent to itself", a, kind)
			}
			if len(key) < maxAnswerChars && !Equivalent(a, key, Options{}) {
				t.Fatalf("%q (%s) is not equivalent to its key %q", a, kind, key)
			}
		}
	})
}

// FuzzExtract checks that extraction never panics and returns text from the response.
func FuzzExtract(f *testing.F) {
	for _, tc := range gradeCases {
		f.Add(tc.response)
	}
	f.Fuzz(func(t *testing.T, response string) {
		got, found := ExtractAnswer(response)
		if !found && got != "" {
			t.Fatalf("not found but extracted %q", got)
		}
		if found && utf8.ValidString(response) && !strings.Contains(response, strings.TrimSpace(got)) && len(got) < 200 {
			// The phrase fallback and the box both return substrings (modulo math delimiters).
			if !strings.Contains(response, strings.Trim(got, "$ .")) {
				t.Fatalf("extracted %q is not in the response", got)
			}
		}
		Grade(response, "1", Options{})
	})
}
