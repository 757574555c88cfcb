package openai

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorstar/tokenizer"
)

// fakeServer stands in for a vLLM server's /metrics and /v1/completions: it reports the load it
// is told to and answers every completion with the same two tokens.
type fakeServer struct {
	srv     *httptest.Server
	metrics atomic.Value // string; "" answers 404
	answer  atomic.Value // string: the completion body
	status  atomic.Int32 // completion status (0: 200)
	hits    atomic.Int32
	hold    chan struct{} // when set, completions wait on it
	arrived chan struct{}
}

const idsAnswer = `{"choices": [{"text": "ab", "finish_reason": "length", "token_ids": [97, 98],
	"logprobs": {"tokens": ["token_id:97", "token_id:98"], "token_logprobs": [-0.5, -0.25]}}]}`

func newFake(t *testing.T, metrics string) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.metrics.Store(metrics)
	f.answer.Store(idsAnswer)
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		m := f.metrics.Load().(string)
		if m == "" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, m)
	})
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		if f.arrived != nil {
			f.arrived <- struct{}{}
			<-f.hold
		}
		if s := f.status.Load(); s != 0 {
			w.WriteHeader(int(s))
			fmt.Fprint(w, `{"error": {"message": "fake failure"}}`)
			return
		}
		fmt.Fprint(w, f.answer.Load().(string))
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func vllmLoad(usage float64, running, waiting int) string {
	return fmt.Sprintf("# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage.\n# TYPE vllm:gpu_cache_usage_perc gauge\n"+
		"vllm:gpu_cache_usage_perc{model_name=\"m\"} %g\nvllm:num_requests_running{model_name=\"m\"} %d\n"+
		"vllm:num_requests_waiting{model_name=\"m\"} %d\n", usage, running, waiting)
}

// fakeClient dispatches over the fakes, scraping only when the test says so.
func fakeClient(t *testing.T, opts Options, fakes ...*fakeServer) *Client {
	t.Helper()
	for _, f := range fakes {
		opts.Endpoints = append(opts.Endpoints, f.srv.URL)
	}
	opts.ScrapeEvery, opts.Backoff = time.Hour, time.Millisecond
	c := newClient(t, opts)
	c.ScrapeNow(ctxT(t))
	return c
}

func send(t *testing.T, c *Client, session string, times int) []string {
	t.Helper()
	var eps []string
	for range times {
		got, err := c.Complete(ctxT(t), Request{Session: session, Prompt: []int32{1, 2}, MaxTokens: 2})
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, got.Endpoint)
	}
	return eps
}

func all(list []string, want string) bool {
	for _, x := range list {
		if x != want {
			return false
		}
	}
	return true
}

// Each new request goes to the endpoint with the most free KV cache, as its metrics say.
func TestKVAwareDispatch(t *testing.T) {
	busy, light := newFake(t, vllmLoad(0.9, 9, 0)), newFake(t, vllmLoad(0.2, 2, 0))
	c := fakeClient(t, Options{}, busy, light)
	if eps := send(t, c, "", 5); !all(eps, light.srv.URL) {
		t.Errorf("with 0.9 and 0.2 used: %v, want all %s", eps, light.srv.URL)
	}
	busy.metrics.Store(vllmLoad(0.1, 1, 0))
	light.metrics.Store(vllmLoad(0.95, 20, 3)) // full, with a queue
	c.ScrapeNow(ctxT(t))
	if eps := send(t, c, "", 3); !all(eps, busy.srv.URL) {
		t.Errorf("after the loads swap: %v, want all %s", eps, busy.srv.URL)
	}
	// SGLang's names.
	busy.metrics.Store("sglang:token_usage{model_name=\"m\"} 0.7\nsglang:num_queue_reqs{model_name=\"m\"} 0\n")
	light.metrics.Store("sglang:token_usage{model_name=\"m\"} 0.1\nsglang:num_queue_reqs{model_name=\"m\"} 0\n")
	c.ScrapeNow(ctxT(t))
	if eps := send(t, c, "", 3); !all(eps, light.srv.URL) {
		t.Errorf("SGLang loads 0.7 and 0.1: %v", eps)
	}
}

// Without metrics, requests go to the endpoint with the fewest outstanding.
func TestLeastOutstandingWithoutMetrics(t *testing.T) {
	a, b := newFake(t, ""), newFake(t, "")
	hold, arrived := make(chan struct{}), make(chan struct{}, 8)
	for _, f := range []*fakeServer{a, b} {
		f.hold, f.arrived = hold, arrived
	}
	c := fakeClient(t, Options{}, a, b)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Complete(ctxT(t), Request{Prompt: []int32{1}, MaxTokens: 2}); err != nil {
				t.Error(err)
			}
		}()
	}
	for range 4 {
		<-arrived
	}
	if a.hits.Load() != 2 || b.hits.Load() != 2 {
		t.Errorf("4 requests held: %d and %d, want 2 and 2", a.hits.Load(), b.hits.Load())
	}
	close(hold)
	wg.Wait()
}

// A session stays on its endpoint while it is up, whatever the loads; it moves when it goes down.
func TestStickySessions(t *testing.T) {
	a, b := newFake(t, vllmLoad(0.5, 5, 0)), newFake(t, vllmLoad(0.1, 1, 0))
	c := fakeClient(t, Options{}, a, b)
	if eps := send(t, c, "s", 1); eps[0] != b.srv.URL {
		t.Fatalf("session s went to %s", eps[0])
	}
	a.metrics.Store(vllmLoad(0.1, 1, 0))
	b.metrics.Store(vllmLoad(0.6, 6, 0))
	c.ScrapeNow(ctxT(t))
	if eps := send(t, c, "s", 3); !all(eps, b.srv.URL) {
		t.Errorf("session s moved: %v", eps)
	}
	if eps := send(t, c, "t", 1); eps[0] != a.srv.URL {
		t.Errorf("new session t went to %s, want the lighter %s", eps[0], a.srv.URL)
	}
	b.srv.Close()
	if eps := send(t, c, "s", 2); !all(eps, a.srv.URL) {
		t.Errorf("session s after its endpoint died: %v", eps)
	}
}

// 5xx is retried elsewhere; a 4xx is the caller's and comes back at once, naming the endpoint.
func TestStatusRetries(t *testing.T) {
	failing, good := newFake(t, vllmLoad(0, 0, 0)), newFake(t, vllmLoad(0.5, 1, 0))
	failing.status.Store(500)
	c := fakeClient(t, Options{}, failing, good)
	if eps := send(t, c, "", 2); !all(eps, good.srv.URL) || failing.hits.Load() == 0 {
		t.Errorf("500 then: %v (the failing one got %d)", eps, failing.hits.Load())
	}
	failing.status.Store(400)
	good.metrics.Store(vllmLoad(0.9, 1, 0))
	c.ScrapeNow(ctxT(t))
	_, err := c.Complete(ctxT(t), Request{Prompt: []int32{1}, MaxTokens: 2})
	if err == nil || !strings.Contains(err.Error(), failing.srv.URL+": HTTP 400: fake failure") {
		t.Errorf("400: %v", err)
	}
}

// Servers that return no ids: the ids come from "token_id:ID" names, or from the text through
// the local tokenizer, and the completion says which.
func TestTokenSources(t *testing.T) {
	tok, err := tokenizer.ByteLevelChat()
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(t, "")
	c := fakeClient(t, Options{Tokenizer: tok}, f)
	for _, tc := range []struct {
		answer string
		source TokenSource
		tokens string
		lps    int
	}{
		{idsAnswer, FromTokenIDs, "[97 98]", 2},
		{`{"choices": [{"text": "ab", "logprobs": {"tokens": ["token_id:97", "token_id:98"], "token_logprobs": [-0.5, -0.25]}}]}`, FromLogprobTokens, "[97 98]", 2},
		{`{"choices": [{"text": "hi<|im_end|>", "logprobs": {"tokens": ["h", "i"], "token_logprobs": [-0.5, -0.25]}}]}`, FromText,
			fmt.Sprint(tok.EncodeWithSpecials("hi<|im_end|>", true)), 0},
	} {
		f.answer.Store(tc.answer)
		got, err := c.Complete(ctxT(t), Request{Prompt: []int32{1}, MaxTokens: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got.Source != tc.source || fmt.Sprint(got.Tokens) != tc.tokens || len(got.LogProbs) != tc.lps {
			t.Errorf("%s: source %s, tokens %v, %d logprobs", tc.answer, got.Source, got.Tokens, len(got.LogProbs))
		}
	}
	f.answer.Store(`{"choices": [{"text": "hi"}]}`)
	_, err = fakeClient(t, Options{}, f).Complete(ctxT(t), Request{Prompt: []int32{1}, MaxTokens: 2})
	if err == nil || !strings.Contains(err.Error(), "no tokenizer") {
		t.Errorf("text without a tokenizer: %v", err)
	}
}

// Servers without update_weights_from_disk get the weights through the hook command.
func TestWeightHook(t *testing.T) {
	f := newFake(t, "")
	out := filepath.Join(t.TempDir(), "hook.txt")
	c := fakeClient(t, Options{WeightHook: []string{"sh", "-c",
		`printf '%s %s %s' "$GORSTAR_ENDPOINT" "$GORSTAR_WEIGHTS_DIR" "$GORSTAR_WEIGHT_VERSION" > "$0"`, out}}, f)
	if err := c.UpdateWeightsFromDisk(ctxT(t), "/weights/step-3", "3"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil || string(got) != f.srv.URL+" /weights/step-3 3" {
		t.Errorf("hook wrote %q (%v)", got, err)
	}
	if c, err := c.Complete(ctxT(t), Request{Prompt: []int32{1}, MaxTokens: 2}); err != nil || c.WeightVersion != "3" {
		t.Errorf("after the hook: version %q (%v)", c.WeightVersion, err)
	}
	err = fakeClient(t, Options{}, f).UpdateWeightsFromDisk(ctxT(t), "/weights/step-3", "3")
	if err == nil || !strings.Contains(err.Error(), "weight hook") {
		t.Errorf("no hook: %v", err)
	}
}

func TestParseLoad(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		ok         bool
		want       Load
	}{
		{"vllm", vllmLoad(0.25, 3, 2), true, Load{KVUsage: 0.25, Running: 3, Waiting: 2}},
		{"vllm new name first", "vllm:gpu_cache_usage_perc 0.9\nvllm:kv_cache_usage_perc 0.3\n", true, Load{KVUsage: 0.3}},
		{"two engines", "vllm:kv_cache_usage_perc{engine=\"0\"} 0.25\nvllm:kv_cache_usage_perc{engine=\"1\"} 0.5\n" +
			"vllm:num_requests_waiting{engine=\"0\"} 1\nvllm:num_requests_waiting{engine=\"1\"} 2\n", true, Load{KVUsage: 0.375, Waiting: 3}},
		{"sglang", "# TYPE sglang:token_usage gauge\nsglang:token_usage{model_name=\"m\"} 0.5\nsglang:num_queue_reqs{model_name=\"m\"} 4\nsglang:num_running_reqs{model_name=\"m\"} 7\n",
			true, Load{KVUsage: 0.5, Waiting: 4, Running: 7}},
		{"gorstar", "gorstar:kv_cache_usage{model_name=\"tiny\"} 0.125\ngorstar:requests_waiting{model_name=\"tiny\"} 0\n", true, Load{KVUsage: 0.125}},
		{"timestamp", "vllm:kv_cache_usage_perc 0.5 1712345678\n", true, Load{KVUsage: 0.5}},
		{"no usage", "vllm:num_requests_waiting 3\n", false, Load{}},
		{"garbage", "<html>not metrics</html>\nvllm:kv_cache_usage_perc{x=\"1\"} many\n", false, Load{}},
		{"empty", "", false, Load{}},
	} {
		got, ok := ParseLoad(strings.NewReader(tc.text))
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
