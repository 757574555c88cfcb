package rollout_test

import (
	"context"
	"encoding/json"
	"log"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/pytool"
	"gorstar/rollout"
)

// Rolling out a group of samples per problem: open the policy (a model directory on the
// in-process engine, or OpenAI-compatible servers), the sandboxed tool, and run the loop. The
// trajectories are graded with reward.Grade and written for programs (Parquet) and people (JSONL).
// The kernels must be set up before a native policy opens (as the commands do).
func Example() {
	ctx := context.Background()
	p, err := rollout.OpenPolicy(ctx, rollout.PolicyOptions{
		Model: "runs/quickstart/sft", Primer: "<reason>", Concurrency: 64,
		// or Endpoints: urls, ServedModel: "policy", Tokenizer: dir
	})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	pool, err := pytool.NewPool(ctx, pytool.DefaultOptions(), pytool.BesideEngine(true))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	o := rollout.DefaultOptions() // 10 turns, 8K tokens, temperature 1, the overlapped schedule
	o.Chat, o.Concurrency = p.ChatOptions([]json.RawMessage{chat.PythonTool}), p.Concurrency
	o.Samples, o.Seed = 16, 1
	loop, err := rollout.New(p.Backend, pool, p.Tokenizer, o)
	if err != nil {
		log.Fatal(err)
	}
	problems := []data.Problem{{ID: "1", Problem: "Compute 37 * 59.", Answer: "2183"}}
	trajs, summary, err := loop.Run(ctx, problems)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("%d of %d correct", summary.Correct, summary.Trajectories)
	if err := rollout.WriteParquet("traces.parquet", trajs); err != nil {
		log.Fatal(err)
	}
	if err := rollout.WriteJSONL("traces.jsonl", trajs); err != nil {
		log.Fatal(err)
	}
}
