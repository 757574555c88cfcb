package rl

import "testing"

func TestPenalty(t *testing.T) {
	tests := []struct {
		name           string
		s              Sample
		pErr, pFmt, pT float64
	}{
		{"flawless", Sample{ToolCalls: 4, AnswerTags: 1, Turns: 5}, 0, 0, 0},
		{"no tool call", Sample{AnswerTags: 1, Turns: 1}, 0.5, 0, 0.5},
		{"one of four failed", Sample{ToolCalls: 4, FailedCalls: 1, AnswerTags: 1, Turns: 5}, 0.25, 0, 0.25},
		{"all failed", Sample{ToolCalls: 3, FailedCalls: 3, AnswerTags: 1, Turns: 4}, 1, 0, 1},
		{"more failures than calls is capped", Sample{ToolCalls: 2, FailedCalls: 5, AnswerTags: 1, Turns: 3}, 1, 0, 1},
		{"no answer tag", Sample{ToolCalls: 2, Turns: 3}, 0, 1, 1},
		{"no turns", Sample{ToolCalls: 2, AnswerTags: 1}, 0, 1, 1},
		{"three answers over four turns", Sample{ToolCalls: 2, AnswerTags: 3, Turns: 4}, 0, 0.5, 0.5},
		{"answers past the turn count are capped", Sample{AnswerTags: 9, Turns: 2}, 0.5, 1, 1.5},
		{"worst", Sample{Turns: 7}, 0.5, 1, 1.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.ToolErrorPenalty(); got != tc.pErr {
				t.Errorf("p_err = %v, want %v", got, tc.pErr)
			}
			if got := tc.s.FormatPenalty(); got != tc.pFmt {
				t.Errorf("p_fmt = %v, want %v", got, tc.pFmt)
			}
			if got := tc.s.Penalty(); got != tc.pT {
				t.Errorf("p = %v, want %v", got, tc.pT)
			}
		})
	}
}
