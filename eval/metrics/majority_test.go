package metrics

import (
	"strings"
	"testing"
)

func TestMajorityVote(t *testing.T) {
	lower := func(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
	tests := []struct {
		name      string
		answers   []string
		normalize func(string) string
		winner    string
		first     int
		ok        bool
	}{
		{"clear majority", []string{"3", "5", "5", "7", "5"}, nil, "5", 1, true},
		{"tie goes to the first to appear", []string{"7", "3", "3", "7"}, nil, "7", 0, true},
		{"tie settled by the later answer's own first index", []string{"2", "9", "9", "2", "4", "4"}, nil, "2", 0, true},
		{"a later answer overtakes", []string{"1", "2", "2"}, nil, "2", 1, true},
		{"normalizer merges forms", []string{"X", " x", "y", "y"}, lower, "x", 0, true},
		{"without the normalizer they differ", []string{"X", " x", "y", "y"}, nil, "y", 2, true},
		{"empty answers do not vote", []string{"", "", "4", ""}, nil, "4", 2, true},
		{"no answer at all", []string{"", ""}, nil, "", 0, false},
		{"no samples", nil, nil, "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, f, ok := MajorityVote(tc.answers, tc.normalize)
			if w != tc.winner || f != tc.first || ok != tc.ok {
				t.Errorf("got (%q, %d, %v), want (%q, %d, %v)", w, f, ok, tc.winner, tc.first, tc.ok)
			}
		})
	}
}
