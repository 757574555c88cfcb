package openai_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorstar/openai"

	"gorstar/engine"
	"gorstar/internal/testmodel"
	"gorstar/internal/testserve"
	"gorstar/model"
	"gorstar/serve"
	"gorstar/tokenizer"
)

func TestMain(m *testing.M) { testmodel.Main(m) }

func tinyDir(t *testing.T, seed uint64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := model.InitDir(dir, model.InitOptions{Preset: "tiny", Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func loadEngine(t *testing.T, dir string) (*engine.Engine, *tokenizer.Tokenizer) {
	return testserve.Engine(t, dir, engine.Options{KVTokens: 8192, MaxSeqs: 8})
}

// startServe is a real `gorstar serve` on 127.0.0.1; Kill drops it and its connections at once.
func startServe(t *testing.T, dir string) *testserve.Server {
	return testserve.Start(t, dir, engine.Options{KVTokens: 8192, MaxSeqs: 8}, serve.Options{ModelName: "tiny"})
}

func newClient(t *testing.T, opts openai.Options) *openai.Client {
	t.Helper()
	c, err := openai.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func native(t *testing.T, eng *engine.Engine, prompt []int32, maxTokens int, seed uint64) engine.Output {
	t.Helper()
	seq, err := eng.Submit(ctxT(t), engine.Request{Prompt: prompt, MaxTokens: maxTokens,
		Sampling: engine.Sampling{Temperature: 1, TopP: 1, Seed: &seed}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := seq.Wait(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

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

func request(prompt []int32, maxTokens int, seed uint64) openai.Request {
	return openai.Request{Prompt: prompt, MaxTokens: maxTokens, Temperature: 1, Seed: &seed, IgnoreEOS: true}
}

// Through the client, gorstar serve gives the ids and logprobs the engine gives for the same seed.
func TestCompleteMatchesEngine(t *testing.T) {
	dir := tinyDir(t, 1)
	s := startServe(t, dir)
	eng, _ := loadEngine(t, dir)
	c := newClient(t, openai.Options{Endpoints: []string{s.URL + "/v1"}, Model: "tiny"})
	prompt := []int32{40, 41, 42, 43, 44}
	got, err := c.Complete(ctxT(t), request(prompt, 10, 5))
	if err != nil {
		t.Fatal(err)
	}
	want := native(t, eng, prompt, 10, 5)
	if got.Source != openai.FromTokenIDs || got.WeightVersion != "0" || got.Endpoint != s.URL {
		t.Errorf("source %q, weight version %q, endpoint %q", got.Source, got.WeightVersion, got.Endpoint)
	}
	if fmt.Sprint(got.Tokens) != fmt.Sprint(want.Tokens) || !sameLogprobs(got.LogProbs, want.LogProbs) {
		t.Errorf("client %v %v, engine %v %v", got.Tokens, got.LogProbs, want.Tokens, want.LogProbs)
	}
}

func TestCheckModel(t *testing.T) {
	s := startServe(t, tinyDir(t, 1))
	if err := newClient(t, openai.Options{Endpoints: []string{s.URL}, Model: "tiny"}).CheckModel(ctxT(t)); err != nil {
		t.Errorf("tiny: %v", err)
	}
	err := newClient(t, openai.Options{Endpoints: []string{s.URL}, Model: "qwen"}).CheckModel(ctxT(t))
	if err == nil || !strings.Contains(err.Error(), `served model "qwen" is not listed by `+s.URL+"; the server lists: tiny") {
		t.Errorf("qwen: %v", err)
	}
}

// A server killed while it generates loses no request: the client retries them on the other.
func TestEndpointKilledMidRun(t *testing.T) {
	dir := tinyDir(t, 1)
	a, b := startServe(t, dir), startServe(t, dir)
	var retries atomic.Int32
	c := newClient(t, openai.Options{Endpoints: []string{a.URL, b.URL}, Model: "tiny", Backoff: time.Millisecond,
		Warn: func(string) { retries.Add(1) }})
	const n = 8
	results := make([]openai.Completion, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := request([]int32{int32(30 + i), 31, 32}, 300, uint64(i))
			req.Session = fmt.Sprint("trajectory-", i)
			results[i], errs[i] = c.Complete(ctxT(t), req)
		}()
	}
	for a.Engine.Stats().Running == 0 { // wait until a is generating for someone, then kill it
		time.Sleep(time.Millisecond)
	}
	a.Kill()
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("request %d: %v", i, errs[i])
		} else if len(results[i].Tokens) != 300 || len(results[i].LogProbs) != 300 {
			t.Errorf("request %d: %d tokens, %d logprobs", i, len(results[i].Tokens), len(results[i].LogProbs))
		}
	}
	if retries.Load() == 0 {
		t.Errorf("no request was retried: the kill did not happen mid-run")
	}
	t.Logf("%d retries after the kill", retries.Load())
}

// When every endpoint refuses the connection, one line names each address.
func TestAllEndpointsDown(t *testing.T) {
	var urls []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "http://"+ln.Addr().String())
		ln.Close()
	}
	c := newClient(t, openai.Options{Endpoints: urls, Backoff: time.Millisecond})
	_, err := c.Complete(ctxT(t), request([]int32{1, 2}, 4, 1))
	if err == nil {
		t.Fatal("no error with every endpoint down")
	}
	msg := err.Error()
	t.Log(msg)
	if strings.Contains(msg, "\n") || !strings.Contains(msg, urls[0]+" (connection refused)") || !strings.Contains(msg, urls[1]+" (connection refused)") {
		t.Errorf("error %q", msg)
	}
}

// A weight push reaches every server: the logprobs become the new model's, the version is recorded;
// a directory the servers cannot load is one error naming them.
func TestUpdateWeightsFromDisk(t *testing.T) {
	dir1, dir2 := tinyDir(t, 1), tinyDir(t, 2)
	a, b := startServe(t, dir1), startServe(t, dir1)
	eng2, _ := loadEngine(t, dir2)
	c := newClient(t, openai.Options{Endpoints: []string{a.URL, b.URL}, Model: "tiny"})
	if err := c.UpdateWeightsFromDisk(ctxT(t), dir2, "step-1"); err != nil {
		t.Fatal(err)
	}
	prompt := []int32{9, 8, 7}
	want := native(t, eng2, prompt, 6, 3)
	for _, url := range []string{a.URL, b.URL} {
		one := newClient(t, openai.Options{Endpoints: []string{url}})
		got, err := one.Complete(ctxT(t), request(prompt, 6, 3))
		if err != nil {
			t.Fatal(err)
		}
		if got.WeightVersion != "step-1" || fmt.Sprint(got.Tokens) != fmt.Sprint(want.Tokens) || !sameLogprobs(got.LogProbs, want.LogProbs) {
			t.Errorf("%s after the push: version %q, %v %v; the new model gives %v %v", url, got.WeightVersion,
				got.Tokens, got.LogProbs, want.Tokens, want.LogProbs)
		}
	}
	err := c.UpdateWeightsFromDisk(ctxT(t), filepath.Join(t.TempDir(), "missing"), "step-2")
	if err == nil || !strings.Contains(err.Error(), a.URL) || !strings.Contains(err.Error(), b.URL) || strings.Contains(err.Error(), "\n") {
		t.Errorf("bad directory: %v", err)
	}
	t.Log(err)
}
