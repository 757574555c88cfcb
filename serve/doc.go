// Package serve is gorstar's OpenAI-compatible HTTP server over the generation engine:
// /v1/completions (text or token-id prompts), /v1/chat/completions (messages rendered with the
// chat template, tools accepted, `<tool_call>` blocks in the output returned as tool_calls) and
// /v1/models, so anything that talks to vLLM or SGLang — gorstar's own rollout and eval clients
// included — can talk to a gorstar model.
//
// Every error is an OpenAI-style JSON body {"error": {"message", "type", "param", "code"}} with
// a 4xx status for what the client can fix. Requests beyond the engine's KV capacity wait their
// turn (up to Options.MaxWaiting queued sequences, then 429); a client that disconnects frees
// its sequences.
package serve
