package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorstar/engine"
	"gorstar/model"
	"gorstar/tokenizer"
)

// tinyDir writes the tiny preset with the given seed (same shapes for every seed).
func tinyDir(t *testing.T, seed uint64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := model.InitDir(dir, model.InitOptions{Preset: "tiny", Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// loadEngine opens the model of dir under an engine closed when the test ends (testserve.Engine,
// which this package's tests cannot import: testserve imports serve).
func loadEngine(t *testing.T, dir string, opts engine.Options) (*engine.Engine, *tokenizer.Tokenizer) {
	t.Helper()
	p, err := engine.LoadPolicy(dir, engine.PolicyOptions{Engine: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p.Engine, p.Tokenizer
}

// serveDir serves the model of dir on 127.0.0.1 and returns its URL.
func serveDir(t *testing.T, dir string, opts engine.Options) string {
	t.Helper()
	return serveDirWith(t, dir, opts, Options{ModelName: "tiny"})
}

// serveDirWith serves the model of dir on 127.0.0.1 with the server options srvOpts and returns
// its URL; the server, engine and model are closed, in that order, when the test ends.
func serveDirWith(t *testing.T, dir string, opts engine.Options, srvOpts Options) string {
	t.Helper()
	eng, tok := loadEngine(t, dir, opts)
	srv, err := New(eng, tok, srvOpts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}

// idCompletion is what a rollout reads back from /v1/completions with token ids.
type idCompletion struct {
	WeightVersion string `json:"weight_version"`
	Choices       []struct {
		TokenIDs       []int32 `json:"token_ids"`
		PromptTokenIDs []int32 `json:"prompt_token_ids"`
		Logprobs       struct {
			Tokens        []string  `json:"tokens"`
			TokenLogprobs []float32 `json:"token_logprobs"`
		} `json:"logprobs"`
	} `json:"choices"`
}

func completeIDs(t *testing.T, url, body string) idCompletion {
	t.Helper()
	r := post(t, url+"/v1/completions", body)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	var out idCompletion
	if err := json.Unmarshal([]byte(r.raw), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// nativeRun generates one request with the engine directly.
func nativeRun(t *testing.T, eng *engine.Engine, req engine.Request) engine.Output {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seq, err := eng.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := seq.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameLogprobs allows the last-bit differences of a different batch composition (engine README).
func sameLogprobs(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-4 {
			return false
		}
	}
	return true
}

// Token ids in, token ids and logprobs out: the same as the engine gives for the same seed, with
// logprob tokens named "token_id:ID" on request; a list of id lists gives one choice per prompt.
func TestTokenIDsRoundTrip(t *testing.T) {
	dir := tinyDir(t, 1)
	url := serveDir(t, dir, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	native, _ := loadEngine(t, dir, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	prompts := [][]int32{{50, 51, 52, 53}, {60, 7, 99}}
	got := completeIDs(t, url, `{"prompt": [[50, 51, 52, 53], [60, 7, 99]], "max_tokens": 12, "temperature": 1,
		"seed": 7, "ignore_eos": true, "logprobs": 0, "return_token_ids": true, "return_tokens_as_token_ids": true}`)
	if len(got.Choices) != 2 || got.WeightVersion != "0" {
		t.Fatalf("%d choices, weight version %q", len(got.Choices), got.WeightVersion)
	}
	for i, ch := range got.Choices {
		seed := uint64(7)
		want := nativeRun(t, native, engine.Request{Prompt: prompts[i], MaxTokens: 12,
			Sampling: engine.Sampling{Temperature: 1, TopP: 1, Seed: &seed}})
		if fmt.Sprint(ch.PromptTokenIDs) != fmt.Sprint(prompts[i]) {
			t.Errorf("prompt %d: prompt_token_ids %v", i, ch.PromptTokenIDs)
		}
		if fmt.Sprint(ch.TokenIDs) != fmt.Sprint(want.Tokens) || !sameLogprobs(ch.Logprobs.TokenLogprobs, want.LogProbs) {
			t.Errorf("prompt %d: served %v %v, engine %v %v", i, ch.TokenIDs, ch.Logprobs.TokenLogprobs, want.Tokens, want.LogProbs)
		}
		for j, name := range ch.Logprobs.Tokens {
			if j < len(ch.TokenIDs) && name != "token_id:"+strconv.Itoa(int(ch.TokenIDs[j])) {
				t.Errorf("prompt %d token %d named %q, id %d", i, j, name, ch.TokenIDs[j])
			}
		}
	}
}

// parseProm reads Prometheus text: name → value, labels dropped, comments skipped.
func parseProm(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, "{")
		_, value, ok := strings.Cut(rest, "} ")
		v, err := strconv.ParseFloat(value, 64)
		if !ok || err != nil {
			t.Fatalf("metrics line %q does not parse", line)
		}
		out[name] = v
	}
	return out
}

func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	res, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	return parseProm(t, b.String())
}

// /metrics reports the KV cache a running request holds under vLLM's names and gorstar's.
func TestMetrics(t *testing.T) {
	url := serveDir(t, tinyDir(t, 1), engine.Options{KVTokens: 4096, MaxSeqs: 4})
	idle := scrape(t, url)
	for _, name := range []string{"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc", "vllm:num_requests_running",
		"vllm:num_requests_waiting", "gorstar:kv_tokens_budget", "gorstar:weight_updates_total", "gorstar:weight_version_info"} {
		if _, ok := idle[name]; !ok {
			t.Errorf("no %s in /metrics", name)
		}
	}
	if idle["vllm:gpu_cache_usage_perc"] != 0 || idle["gorstar:kv_tokens_budget"] != 4096 {
		t.Errorf("idle metrics %v", idle)
	}
	for _, path := range []string{"/health", "/healthz"} {
		res, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("%s: %d", path, res.StatusCode)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions",
		strings.NewReader(`{"prompt": "abc", "max_tokens": 1021, "ignore_eos": true, "stream": true}`))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := bufio.NewReader(res.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	busy := scrape(t, url)
	if u := busy["vllm:gpu_cache_usage_perc"]; u != 1024.0/4096 || busy["vllm:num_requests_running"] != 1 || busy["gorstar:kv_tokens_used"] < 1 {
		t.Errorf("while a 1024-token request runs: %v", busy)
	}
}

func updateWeights(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	r := post(t, url+"/update_weights_from_disk", body)
	return r.status, r.body
}

// update_weights_from_disk swaps the served weights: the logprobs become those of the new model
// and the weight version moves; a bad directory changes nothing.
func TestUpdateWeightsFromDisk(t *testing.T) {
	dir1, dir2 := tinyDir(t, 1), tinyDir(t, 2)
	url := serveDir(t, dir1, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	native2, _ := loadEngine(t, dir2, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	body := `{"prompt": [10, 20, 30], "max_tokens": 6, "temperature": 0, "ignore_eos": true, "logprobs": 0, "return_token_ids": true}`
	before := completeIDs(t, url, body)

	status, res := updateWeights(t, url, fmt.Sprintf(`{"model_path": %q}`, dir2))
	if status != 200 || res["success"] != true || res["weight_version"] != "1" {
		t.Fatalf("update: %d %v", status, res)
	}
	after := completeIDs(t, url, body)
	want := nativeRun(t, native2, engine.Request{Prompt: []int32{10, 20, 30}, MaxTokens: 6})
	if after.WeightVersion != "1" || fmt.Sprint(after.Choices[0].TokenIDs) != fmt.Sprint(want.Tokens) ||
		!sameLogprobs(after.Choices[0].Logprobs.TokenLogprobs, want.LogProbs) {
		t.Errorf("after the update: version %q, %v %v; the new model gives %v %v", after.WeightVersion,
			after.Choices[0].TokenIDs, after.Choices[0].Logprobs.TokenLogprobs, want.Tokens, want.LogProbs)
	}
	if sameLogprobs(before.Choices[0].Logprobs.TokenLogprobs, after.Choices[0].Logprobs.TokenLogprobs) {
		t.Errorf("logprobs unchanged by the update: %v", after.Choices[0].Logprobs.TokenLogprobs)
	}
	if m := scrape(t, url); m["gorstar:weight_updates_total"] != 1 {
		t.Errorf("weight_updates_total %v", m["gorstar:weight_updates_total"])
	}

	// Another architecture, a missing directory, no path: 400, success false, nothing changes.
	other := filepath.Join(t.TempDir(), "other")
	c := model.Config{ModelType: "qwen3", VocabSize: 300, HiddenSize: 16, IntermediateSize: 32, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 8, RopeTheta: 1e4, RMSNormEps: 1e-6, MaxPositionEmbeddings: 64}
	m, err := model.New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Save(other); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{fmt.Sprintf(`{"model_path": %q}`, other), `{"model_path": "/nonexistent/weights"}`, `{}`, `{"model_path": 5}`} {
		status, res := updateWeights(t, url, bad)
		t.Logf("%s → %d %v", bad, status, res["message"])
		if status != 400 || res["success"] != false || res["message"] == "" {
			t.Errorf("%s: %d %v", bad, status, res)
		}
	}
	if again := completeIDs(t, url, body); again.WeightVersion != "1" ||
		!sameLogprobs(again.Choices[0].Logprobs.TokenLogprobs, after.Choices[0].Logprobs.TokenLogprobs) {
		t.Errorf("a failed update changed the weights or the version (%q)", again.WeightVersion)
	}

	// Back to the first weights, with a label: the first logprobs again.
	if status, res := updateWeights(t, url, fmt.Sprintf(`{"model_path": %q, "weight_version": "step-0"}`, dir1)); status != 200 {
		t.Fatalf("update back: %d %v", status, res)
	}
	back := completeIDs(t, url, body)
	if back.WeightVersion != "step-0" || !sameLogprobs(back.Choices[0].Logprobs.TokenLogprobs, before.Choices[0].Logprobs.TokenLogprobs) {
		t.Errorf("back to the first weights: version %q, logprobs %v, first %v", back.WeightVersion,
			back.Choices[0].Logprobs.TokenLogprobs, before.Choices[0].Logprobs.TokenLogprobs)
	}
}
