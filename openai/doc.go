// Package openai is gorstar's client for OpenAI-compatible inference servers — vLLM, SGLang and
// `gorstar serve` — spread over several endpoints, as remote rollouts use them.
//
// Completions go token ids in, token ids and log-probabilities out (vLLM's return_token_ids, or
// its "token_id:ID" logprob names), so a trajectory is never re-tokenized; a server that returns
// only text is read through the local tokenizer, and every Completion records which path it took.
//
// Dispatch is KV-capacity aware, the load balancer of rStar2-Agent: a background scrape of each
// endpoint's /metrics (vLLM's kv_cache_usage and num_requests_waiting, SGLang's token_usage and
// num_queue_reqs, gorstar serve's own) sends each new request to the endpoint with the most free
// KV cache, falling back to the fewest outstanding requests where metrics are missing; a session
// (a trajectory) keeps its endpoint while that endpoint is up, for its prefix cache. Attempts
// have a timeout; connection errors, timeouts, 5xx, 429 and garbage are retried on another
// endpoint with backoff; an endpoint that cannot be reached is taken out and tried again later.
// When none answers, one error names every address and what each said.
//
// Weights reach the servers with UpdateWeightsFromDisk (SGLang's and gorstar serve's endpoint) or
// a hook command for servers without one; an endpoint that misses an update gets no requests until
// it has taken it.
//
// Chat asks /v1/chat/completions for text mode (no local tokenizer: the server's chat template
// and tool parser). The request and answer types on the wire (wire.go) are shared with gorstar
// serve, which writes and reads the same ones.
package openai
