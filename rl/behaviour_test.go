package rl_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/engine"
	"gorstar/internal/rundir"
	"gorstar/internal/testserve"
	"gorstar/rl"
	"gorstar/serve"
)

// RL with remote rollouts on each server behaviour of vLLM that returns ids — token_ids,
// "token_id:ID" logprob names, through a 500 and a dropped connection — rolls out the same
// trajectories and so trains the same model: the same metrics of what was sampled and trained
// on, the same final weights. A server that returns text only fails the run: training needs the
// ids and logprobs the policy sampled.
func TestRemoteBehavioursTrainAlike(t *testing.T) {
	pol := policyDir(t)
	problems := problemsFile(t, 8, 0)
	srv := testserve.Start(t, pol, engine.Options{KVTokens: 8192, MaxSeqs: 16}, serve.Options{ModelName: servedName})
	sampled := []string{"reward_mean", "trained_tokens", "mean_response_tokens_positive", "mean_response_tokens_negative",
		"turns_per_rollout", "tool_calls_per_rollout", "truncation_rate", "loss", "grad_norm"}
	var first string
	var wantModel []byte
	var wantMetrics []map[string]any
	for _, b := range testserve.Behaviours() {
		o := testOptions(pol, problems, filepath.Join(t.TempDir(), b.Name))
		o.RL.Stages[0].Steps, o.RL.Stages[1].Steps = 1, 1
		o.Rollout.Endpoints, o.ServedModel = []string{testserve.StartMimic(t, srv, b)}, servedName
		if b.IDs == testserve.IDsNone {
			if b.Name != "vllm-text" {
				continue // one text-only server shows the refusal
			}
			_, err := rl.Run(context.Background(), o)
			skipWithoutSandbox(t, err)
			if err == nil {
				t.Errorf("%s: a server without token ids trained", b.Name)
			} else {
				t.Logf("%s: %v", b.Name, err)
				if !strings.Contains(err.Error(), "no token ids") || strings.Contains(err.Error(), "sandbox") {
					t.Errorf("%s: %v, want the refusal to name the missing token ids", b.Name, err)
				}
			}
			continue
		}
		_, err := rl.Run(context.Background(), o)
		skipWithoutSandbox(t, err)
		if err != nil {
			t.Fatalf("%s: %v", b.Name, err)
		}
		final, err := os.ReadFile(filepath.Join(o.Out, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := rundir.ReadMetrics(filepath.Join(o.Out, "metrics.jsonl"))
		if err != nil || len(recs) != 2 {
			t.Fatalf("%s: %d metrics lines (%v)", b.Name, len(recs), err)
		}
		if wantModel == nil {
			first, wantModel, wantMetrics = b.Name, final, recs
			continue
		}
		for i := range recs {
			for _, k := range sampled {
				if recs[i][k] != wantMetrics[i][k] {
					t.Errorf("%s step %d: %s %v, %s had %v", b.Name, i+1, k, recs[i][k], first, wantMetrics[i][k])
				}
			}
		}
		if !bytes.Equal(final, wantModel) {
			t.Errorf("%s: the final weights differ from %s's", b.Name, first)
		}
	}
}
