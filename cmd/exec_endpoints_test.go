package cmd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorstar/internal/testenv"
	"gorstar/pytool"
)

// execNode is a `gorstar exec serve` node on a loopback port (the same pool and server the
// command runs), counting the calls it is sent; kill drops it and its connections.
type execNode struct {
	srv   *httptest.Server
	calls atomic.Int64
	once  sync.Once
}

func startExecNode(t *testing.T, workers int) *execNode {
	t.Helper()
	needSandbox(t)
	cfg := pytool.DefaultOptions()
	cfg.Workers, cfg.Modules = workers, []string{"math"}
	if s := os.Getenv("GORSTAR_TEST_SANDBOX"); s != "" {
		cfg.Sandbox = s
	}
	pool, err := pytool.NewPool(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	n := &execNode{}
	h := pytool.NewServer(pool)
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			n.calls.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(n.kill)
	return n
}

func (n *execNode) kill() {
	n.once.Do(func() {
		n.srv.Listener.Close()
		n.srv.CloseClientConnections()
	})
}

// With exec.endpoints the rollouts' tool calls go to exec serve nodes, not to workers started
// here; one node dying mid-run loses no call (each goes to the other), and a list where no node
// answers is one line naming the key, exit 1.
func TestRolloutToolsOnExecNodes(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	a, b := startExecNode(t, 4), startExecNode(t, 4)
	done := make(chan struct{})
	go func() { // kill a once it has taken a few calls
		defer close(done)
		for a.calls.Load() < 4 {
			select {
			case <-t.Context().Done():
				return
			default:
			}
			time.Sleep(time.Millisecond)
		}
		a.kill()
	}()
	r := runCLI(t, "rollout", "bench", "--preset", "tiny", "--tool-sleep", "20ms", "--trajectories", "16",
		"--concurrency", "8", "--threads", "2", "--json", "--set", `exec.endpoints=["`+a.srv.URL+`", "`+b.srv.URL+`"]`)
	<-done
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	res := decodeJSON(t, r)
	calls := res["tool_calls"].(float64)
	if calls < 8 || res["failed_tool_calls"] != 0.0 || res["tool_priority"] != "remote" {
		t.Errorf("%v tool calls, %v failed, priority %v: want calls, none failed, remote", calls, res["failed_tool_calls"], res["tool_priority"])
	}
	if got := a.calls.Load() + b.calls.Load(); got < int64(calls) || a.calls.Load() < 4 || b.calls.Load() == 0 {
		t.Errorf("nodes got %d and %d requests for %v calls (each of 3 runs): want both used, all calls sent",
			a.calls.Load(), b.calls.Load(), calls)
	}
	t.Logf("%v tool calls; requests: node a %d (killed after 4), node b %d", calls, a.calls.Load(), b.calls.Load())

	// Every node down: one line naming exec.endpoints and the nodes, exit 1.
	r = runCLI(t, "rollout", "bench", "--preset", "tiny", "--trajectories", "4", "--concurrency", "2", "--json",
		"--set", `exec.endpoints=["`+a.srv.URL+`"]`)
	if r.Code != 1 || !strings.Contains(r.Stderr, "exec.endpoints: none of the 1 servers answers ("+a.srv.URL) ||
		strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("no node answering: %+v", r)
	}
}
