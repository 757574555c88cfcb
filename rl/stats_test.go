package rl

import "testing"

func TestStats(t *testing.T) {
	samples := []Sample{
		{Reward: 1, ToolCalls: 4, FailedCalls: 1, Turns: 5, ResponseTokens: 100},
		{Reward: 1, ToolCalls: 4, FailedCalls: 0, Turns: 3, ResponseTokens: 300},
		{Reward: 0, ToolCalls: 2, FailedCalls: 2, Turns: 2, ResponseTokens: 1000, Truncated: true},
		{Reward: 0, ToolCalls: 0, Turns: 2, ResponseTokens: 600},
	}
	want := SampleStats{N: 4, Accuracy: 0.5, FailedCallSharePositive: 1.0 / 8, FailedCallShareNegative: 1,
		MeanTokensPositive: 200, MeanTokensNegative: 800, CallsPerRollout: 2.5, TurnsPerRollout: 3,
		TruncationRate: 0.25}
	if got := Stats(samples); got != want {
		t.Errorf("Stats = %+v\nwant   %+v", got, want)
	}
	if got := Stats(nil); got != (SampleStats{}) {
		t.Errorf("Stats(nil) = %+v, want zeros", got)
	}
	if got := Stats(samples[3:]); got.FailedCallShareNegative != 0 || got.MeanTokensPositive != 0 {
		t.Errorf("no calls, no positives: %+v, want zero shares", got)
	}
}
