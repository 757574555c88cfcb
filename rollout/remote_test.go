package rollout

import (
	"strings"
	"testing"

	"gorstar/chat"
	"gorstar/engine"
	"gorstar/internal/testmodel"
	"gorstar/internal/testserve"
	"gorstar/pytool"
	"gorstar/serve"
)

// rollOn rolls problems out on the policy of po (natively or on endpoints).
func rollOn(t *testing.T, po PolicyOptions, o Options, pool pytool.Runner) []Trajectory {
	t.Helper()
	pol, err := OpenPolicy(ctxT(t), po)
	if err != nil {
		t.Fatal(err)
	}
	defer pol.Close()
	o.Chat = pol.ChatOptions(o.Chat.Tools)
	l, err := New(pol.Backend, pool, pol.Tokenizer, o)
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := l.Run(ctxT(t), benchProblems(6))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// Rollouts of an untrained model (it calls the tool now and then, writes bytes that are not
// UTF-8) on gorstar serve are the native engine's, id for id, across tool calls; on each server
// behaviour of vLLM that returns ids (token_ids, "token_id:ID" logprob names, through a 500 and a
// dropped connection) they are the same trajectories as each other; on servers that return text
// only, every turn that stopped at a tool call ends with the call closed, whether the server kept
// the stop string, cut it and named it, or cut it and said nothing.
func TestRemoteBehaviours(t *testing.T) {
	dir := testmodel.TinyDir(t)
	pool := testPool(t, 4)
	o := DefaultOptions()
	o.Samples, o.Concurrency, o.Seed, o.MaxResponseTokens, o.Temperature = 4, 8, 5, 600, 0.8
	eo := engine.Options{KVTokens: 32768, MaxSeqs: 8}
	srv := testserve.Start(t, dir, eo, serve.Options{ModelName: "tiny", Primer: "<reason>"})
	remote := func(url string) PolicyOptions {
		return PolicyOptions{Endpoints: []string{url}, ServedModel: "tiny", Tokenizer: dir, Primer: "<reason>", Concurrency: 8}
	}
	native := rollOn(t, PolicyOptions{Model: dir, Engine: eo, Primer: "<reason>", Concurrency: 8}, o, pool)
	served := rollOn(t, remote(srv.URL), o, pool)
	sameTrajectories(t, "gorstar serve vs native", served, native)
	resumed := 0
	for _, tr := range native {
		if tr.NumTurns > 1 {
			resumed++
		}
	}
	if resumed == 0 {
		t.Fatal("no trajectory went on after a tool call: the test covers nothing past the first turn")
	}

	var withIDs []Trajectory
	for _, b := range testserve.Behaviours() {
		ts := rollOn(t, remote(testserve.StartMimic(t, srv, b)), o, pool)
		if b.IDs != testserve.IDsNone {
			if withIDs == nil {
				withIDs = ts
			} else {
				sameTrajectories(t, b.Name+" vs vllm", ts, withIDs)
			}
			continue
		}
		// The first turn is the same generation as with ids: its call must read the same, closed
		// where the model closed it. A server that names no stop leaves it to the rollout, which
		// closes an open call: the model's own end of turn inside a call is then read as the close.
		calls := 0
		for k, tr := range ts {
			if tr.Finish == FinishError {
				t.Fatalf("%s: trajectory %d failed: %s", b.Name, k, tr.Error)
			}
			want, got := withIDs[k].Turns[0], tr.Turns[0]
			if want.Status == "" {
				continue
			}
			calls++
			wantErr := want.ParseError
			if b.StopField == "" {
				wantErr = strings.Replace(wantErr, "; the call is also missing its closing "+chat.ToolCallClose, "", 1)
			}
			if got.Status != want.Status || got.ParseError != wantErr {
				t.Errorf("%s: problem %d sample %d: first call %q (%s), want %q (%s)", b.Name, tr.ProblemIndex, tr.Sample,
					got.ParseError, got.Status, wantErr, want.Status)
			}
		}
		if calls == 0 {
			t.Errorf("%s: no first turn made a call", b.Name)
		}
	}
}
