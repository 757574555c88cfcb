package eval

import (
	"context"
	"encoding/json"
	"fmt"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/eval/metrics"
	"gorstar/rollout"
)

// Reasons ProblemCheck drops a problem (beside data's rule reasons).
const (
	DropPromptTokens = "prompt_tokens" // its rollout prompt is longer than MaxPromptTokens
	DropSolved       = "solved"        // the policy solves it more often than MaxPassRate
)

// ProblemCheck is the model-aware check of `gorstar data filter` (a data.FilterOptions.Check):
// too long a rollout prompt first, then too high a pass rate. Either part may be absent.
type ProblemCheck struct {
	Render          *chat.Renderer // renders the rollout prompt; nil: no prompt check
	MaxPromptTokens int
	Rater           *Rater // samples the policy; nil: no pass-rate check
	MaxPassRate     float64
	// PassRates, when set, receives each rated problem's pass rate and whether it was kept.
	PassRates *json.Encoder
	Rated     int // problems rated so far
}

// PassRateLine is what PassRates receives for a problem.
type PassRateLine struct {
	metrics.PassRate
	Kept bool `json:"kept"`
}

// Check returns, for each row, the reason it is dropped ("" to keep it). Rows the prompt check
// drops are not rated.
func (pc *ProblemCheck) Check(ctx context.Context, rows []data.Problem) ([]string, error) {
	drop := make([]string, len(rows))
	var toRate []data.Problem
	var at []int
	for i, p := range rows {
		if pc.Render != nil {
			ids, err := rollout.Prompt(pc.Render, p)
			if err != nil {
				return nil, fmt.Errorf("data filter: render problem %s: %w", p.ID, err)
			}
			if len(ids) > pc.MaxPromptTokens {
				drop[i] = DropPromptTokens
				continue
			}
		}
		if pc.Rater != nil {
			toRate, at = append(toRate, p), append(at, i)
		}
	}
	if len(toRate) == 0 {
		return drop, nil
	}
	rates, err := pc.Rater.Rate(ctx, toRate)
	if err != nil {
		return nil, err
	}
	pc.Rated += len(rates)
	for j, r := range rates {
		kept := r.AtMost(pc.MaxPassRate)
		if !kept {
			drop[at[j]] = DropSolved
		}
		if pc.PassRates != nil {
			if err := pc.PassRates.Encode(PassRateLine{PassRate: r, Kept: kept}); err != nil {
				return nil, err
			}
		}
	}
	return drop, nil
}
