package pytool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gorstar/internal/testenv"
)

func postJSON(t *testing.T, url string, body any, out any) int {
	t.Helper()
	data, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
	}
	return resp.StatusCode
}

func TestServerRunBatchHealthMetrics(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	p := newTestPool(t, testConfig())
	srv := httptest.NewServer(NewServer(p))
	defer srv.Close()

	var r Result
	if code := postJSON(t, srv.URL+"/v1/run", map[string]any{"code": "input() * 2", "stdin": "ab\n"}, &r); code != 200 || r.Stdout != "'abab'\n" {
		t.Fatalf("/v1/run: %d %+v", code, r)
	}
	var calls []Call
	for i := 0; i < 20; i++ {
		calls = append(calls, Call{Code: fmt.Sprintf("import time, random\ntime.sleep(random.random() / 50)\nprint(%d)", i)})
	}
	var b BatchResponse
	if code := postJSON(t, srv.URL+"/v1/batch", BatchRequest{Calls: calls}, &b); code != 200 || len(b.Results) != 20 {
		t.Fatalf("/v1/batch: %d, %d results", code, len(b.Results))
	}
	for i, res := range b.Results {
		if res.Stdout != fmt.Sprintf("%d\n", i) {
			t.Fatalf("batch result %d out of order: %+v", i, res)
		}
	}
	if code := postJSON(t, srv.URL+"/v1/run", map[string]any{"cod": "1"}, nil); code != 400 {
		t.Errorf("unknown field: status %d, want 400", code)
	}
	for _, path := range []string{"/healthz", "/health"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, err, resp)
		}
		resp.Body.Close()
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `gorstar_exec_calls_total{status="ok"} 21`) {
		t.Errorf("/metrics lacks the call count:\n%s", metrics)
	}
}

// A full queue answers 429 at once instead of hanging.
func TestServerFullQueueAnswers429(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	cfg := testConfig()
	cfg.Workers = 1
	cfg.QueueSize = 1
	p := newTestPool(t, cfg)
	srv := httptest.NewServer(NewServer(p))
	defer srv.Close()
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r Result
			postJSON(t, srv.URL+"/v1/run", Call{Code: "import time\ntime.sleep(0.8)"}, &r)
		}()
	}
	// Each call sleeps 0.8 s, so the queue stays full while the next calls are made.
	waitCalls(t, p, 1, 1)
	start := time.Now()
	if code := postJSON(t, srv.URL+"/v1/run", Call{Code: "print(1)"}, nil); code != http.StatusTooManyRequests {
		t.Errorf("third call: status %d, want 429", code)
	}
	if code := postJSON(t, srv.URL+"/v1/batch", BatchRequest{Calls: []Call{{Code: "1"}}}, nil); code != http.StatusTooManyRequests {
		t.Errorf("batch: status %d, want 429", code)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Logf("429 answers took %s", d)
	}
	wg.Wait()
	var r Result
	if code := postJSON(t, srv.URL+"/v1/run", Call{Code: "print(1)"}, &r); code != 200 || r.Status != StatusOK {
		t.Errorf("after the queue drained: %d %+v", code, r)
	}
}

// Shutdown finishes the calls in flight and answers them.
func TestServeShutsDownGracefully(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	p := newTestPool(t, testConfig())
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, "127.0.0.1:0", p, func(a net.Addr) { addrc <- a.String() }) }()
	url := "http://" + <-addrc
	results := make(chan Result, 1)
	go func() {
		var r Result
		postJSON(t, url+"/v1/run", Call{Code: "import time\ntime.sleep(0.7)\nprint('finished')"}, &r)
		results <- r
	}()
	waitCalls(t, p, 1, 0)
	cancel()
	if r := <-results; r.Status != StatusOK || r.Stdout != "finished\n" {
		t.Fatalf("in-flight call during shutdown: %+v", r)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := http.Post(url+"/v1/run", "application/json", strings.NewReader(`{"code":"1"}`)); err == nil {
		t.Error("the server still accepts calls after shutdown")
	}
}

// The client spreads calls over servers and survives one of them being down.
func TestClientSpreadsAndRetries(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	p := newTestPool(t, testConfig())
	a := httptest.NewServer(NewServer(p))
	defer a.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // connection refused from now on
	c, err := NewClient([]string{deadURL, a.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		if r := c.Run(ctx, Call{Code: fmt.Sprint(i)}); r.Status != StatusOK || r.Stdout != fmt.Sprintf("%d\n", i) {
			t.Fatalf("call %d through a client with one dead endpoint: %+v", i, r)
		}
	}
	var calls []Call
	for i := 0; i < 150; i++ {
		calls = append(calls, Call{Code: fmt.Sprint(i)})
	}
	for i, r := range c.RunBatch(ctx, calls) {
		if r.Stdout != fmt.Sprintf("%d\n", i) {
			t.Fatalf("batch result %d: %+v", i, r)
		}
	}
	if _, err := NewClient([]string{"localhost:8090"}); err == nil {
		t.Error("an endpoint without a scheme was accepted")
	}
}

// The client honours back-pressure: 429s are retried with back-off until every call is served.
func TestClientBacksOffOnFullQueue(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	cfg := testConfig()
	cfg.Workers = 1
	cfg.QueueSize = 1
	p := newTestPool(t, cfg)
	srv := httptest.NewServer(NewServer(p))
	defer srv.Close()
	c, err := NewClient([]string{srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var calls []Call
	for i := 0; i < 6; i++ {
		calls = append(calls, Call{Code: fmt.Sprintf("import time\ntime.sleep(0.1)\nprint(%d)", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, r := range runConcurrently(ctx, c, calls) {
		if r.Status != StatusOK || r.Stdout != fmt.Sprintf("%d\n", i) {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
	if p.Stats().rejected.Load() == 0 {
		t.Log("no call was refused: the queue never filled (slow machine?)")
	}
}

// waitCalls waits until p runs `running` calls and holds `queued` waiting ones (a fixed pause could
// end before the calls arrived, on a loaded machine).
func waitCalls(t *testing.T, p *Pool, running, queued int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); p.Stats().busy.Load() != running || p.Stats().queued.Load() != queued; {
		if time.Now().After(deadline) {
			t.Fatalf("want %d calls running and %d queued; %d and %d after 10 s", running, queued,
				p.Stats().busy.Load(), p.Stats().queued.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A session's calls stay on the server that holds its interpreter, stateless and session calls
// mix in one batch, and closing a session through the client ends its interpreter there.
func TestClientSessionsStickAndClose(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	pa, pb := newTestPool(t, testConfig()), newTestPool(t, testConfig())
	a, b := httptest.NewServer(NewServer(pa)), httptest.NewServer(NewServer(pb))
	defer a.Close()
	defer b.Close()
	c, err := NewClient([]string{a.URL, b.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 8
	var first, second []Call
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("s%d", i)
		first = append(first, Call{Session: s, Code: fmt.Sprintf("x = %d\nimport time; time.sleep(0.2)", i)})
		second = append(second, Call{Session: s, Code: "x"}, Call{Code: "'x' in globals()"})
	}
	for i, r := range c.RunBatch(ctx, first) {
		if r.Status != StatusOK {
			t.Fatalf("session call %d: %+v", i, r)
		}
	}
	held := func(p *Pool) int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.sessions)
	}
	if ha, hb := held(pa), held(pb); ha == 0 || hb == 0 || ha+hb != n {
		t.Fatalf("sessions held: %d and %d, want both servers used and %d in all", ha, hb, n)
	}
	for i, r := range c.RunBatch(ctx, second) {
		want := "False\n"
		if i%2 == 0 {
			want = fmt.Sprintf("%d\n", i/2)
		}
		if r.Status != StatusOK || r.Stdout != want {
			t.Fatalf("batch result %d: %+v, want stdout %q", i, r, want)
		}
	}
	for i := 0; i < n; i++ {
		c.CloseSession(fmt.Sprintf("s%d", i))
	}
	if ha, hb := held(pa), held(pb); ha+hb != 0 {
		t.Fatalf("%d and %d sessions left after closing them all", ha, hb)
	}
	if r := c.Run(ctx, Call{Session: "s0", Code: "'x' in globals()"}); r.Stdout != "False\n" {
		t.Fatalf("a closed session kept its state: %+v", r)
	}
	if code := postJSON(t, a.URL+"/v1/sessions/close", map[string]string{"session": ""}, nil); code != http.StatusBadRequest {
		t.Fatalf("closing an unnamed session: %d, want 400", code)
	}
	var answer map[string]bool
	if code := postJSON(t, a.URL+"/v1/sessions/close", map[string]string{"session": "never"}, &answer); code != http.StatusOK || !answer["ok"] {
		t.Fatalf("closing a session that never started: %d %v, want 200 ok", code, answer)
	}
}
