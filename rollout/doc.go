// Package rollout runs multi-turn, tool-integrated rollouts: the agent loop of rStar2-Agent's RL
// and of evaluation.
//
// A trajectory starts from a problem rendered with the chat template (chat.Renderer), generates
// an assistant turn on a Backend until the turn ends (a pause on </tool_call>, the end-of-turn
// token, or the response budget), parses the first tool call, runs it in the Python sandbox
// (pytool.Runner), appends the tool turn and the next generation prompt as token ids and resumes.
// It stops on a turn without a call, at Options.MaxTurns (a call in the last turn is not run), or
// when generated plus appended tokens reach Options.MaxResponseTokens (truncated, reward 0).
//
// Token in, token out: a Trajectory keeps exactly the ids the policy generated and the ids
// appended, never re-tokenized, with the loss mask (generated = true) and the sampled tokens'
// log-probabilities, which is what the RL loss needs.
//
// Scheduling: with Options.Overlap, each trajectory goes on as soon as its tool answers while the
// others keep decoding; without it, the naive schedule runs trajectories in waves in which every
// turn waits for the whole wave's generation and then for every tool call of the wave. Bench
// compares the two.
//
// Traces are written as Parquet (for programs) and JSONL (for people), atomically.
package rollout
