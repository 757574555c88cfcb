package serve

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// metric is one Prometheus gauge or counter.
type metric struct {
	name, typ, help string
	value           float64
}

// metrics answers GET /metrics in the Prometheus text format: the engine's load under vLLM's names
// (what KV-aware load balancers, gorstar's openai client among them, already read) and under
// gorstar's own, with the weight version. KV usage counts reserved capacity, since admission is by
// reservation: 1 minus it is the room a new request can get.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	st := s.eng.Stats()
	usage := 0.0
	if st.KVTokens > 0 {
		usage = float64(st.KVReserved) / float64(st.KVTokens)
	}
	updates, version := s.weights.current()
	list := []metric{
		{"vllm:gpu_cache_usage_perc", "gauge", "KV-cache usage as a fraction, 1 = full (reserved tokens over the budget).", usage},
		{"vllm:kv_cache_usage_perc", "gauge", "The same as vllm:gpu_cache_usage_perc (vLLM's newer name).", usage},
		{"vllm:num_requests_running", "gauge", "Sequences admitted and decoding.", float64(st.Running)},
		{"vllm:num_requests_waiting", "gauge", "Sequences waiting for KV-cache room.", float64(st.Waiting)},
		{"gorstar:kv_cache_usage", "gauge", "Reserved KV tokens over the budget (0..1).", usage},
		{"gorstar:kv_tokens_reserved", "gauge", "KV tokens reserved by admitted sequences.", float64(st.KVReserved)},
		{"gorstar:kv_tokens_used", "gauge", "KV tokens holding keys and values now.", float64(st.KVUsed)},
		{"gorstar:kv_tokens_budget", "gauge", "The KV budget in tokens (--kv-tokens).", float64(st.KVTokens)},
		{"gorstar:requests_running", "gauge", "Sequences admitted and decoding.", float64(st.Running)},
		{"gorstar:requests_waiting", "gauge", "Sequences waiting for KV-cache room.", float64(st.Waiting)},
		{"gorstar:requests_paused", "gauge", "Sequences paused with their cache kept.", float64(st.Paused)},
		{"gorstar:steps_total", "counter", "Engine steps run.", float64(st.Steps)},
		{"gorstar:prompt_tokens_total", "counter", "Prompt and appended tokens prefilled.", float64(st.PromptTokens)},
		{"gorstar:generation_tokens_total", "counter", "Tokens generated.", float64(st.GeneratedTokens)},
		{"gorstar:shared_prompt_tokens_total", "counter", "Prompt tokens copied from a sibling instead of prefilled.", float64(st.SharedPromptTokens)},
		{"gorstar:weight_updates_total", "counter", "Weight updates loaded since start (update_weights_from_disk).", float64(updates)},
	}
	label := fmt.Sprintf(`{model_name=%s}`, strconv.Quote(s.opts.ModelName))
	var b strings.Builder
	for _, m := range list {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s%s %s\n", m.name, m.help, m.name, m.typ, m.name, label,
			strconv.FormatFloat(m.value, 'g', -1, 64))
	}
	fmt.Fprintf(&b, "# HELP gorstar:weight_version_info The weight version responses report, as a label.\n"+
		"# TYPE gorstar:weight_version_info gauge\ngorstar:weight_version_info{model_name=%s,weight_version=%s} 1\n",
		strconv.Quote(s.opts.ModelName), strconv.Quote(version))
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
	return nil
}
