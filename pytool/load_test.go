package pytool

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
)

// TestLoad45K is rStar2's per-step peak: 45,000 calls sent at once to an exec server with 1,024
// in flight. It takes minutes, so it runs only when asked:
//
//	GORSTAR_EXEC_LOADTEST=1 go test ./pytool/ -run TestLoad45K -v -timeout 30m
//
// GORSTAR_EXEC_LOADTEST_CALLS and _INFLIGHT change the sizes.
func TestLoad45K(t *testing.T) {
	if os.Getenv("GORSTAR_EXEC_LOADTEST") == "" {
		t.Skip("set GORSTAR_EXEC_LOADTEST=1 to run the 45,000-call load test (minutes)")
	}
	n, inflight := envInt("GORSTAR_EXEC_LOADTEST_CALLS", 45000), envInt("GORSTAR_EXEC_LOADTEST_INFLIGHT", 1024)
	cfg := DefaultOptions()
	p := newTestPool(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	go func() { _ = Serve(ctx, "127.0.0.1:0", p, func(a net.Addr) { addrc <- a.String() }) }()
	url := "http://" + <-addrc
	c, err := NewClient([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	_, before := memoryMB()
	res, err := LoadTest(context.Background(), c, n, inflight)
	if err != nil {
		t.Fatal(err)
	}
	_, peak := memoryMB()
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	t.Logf("%d calls, %d in flight, %d workers: %.1f s (%.0f calls/s), p50 %.1f ms, p99 %.1f ms, lost %d, duplicated %d, errors %d",
		res.Calls, res.InFlight, p.Workers(), res.Seconds, res.CallsPerS, res.P50MS, res.P99MS, res.Lost, res.Duplicated, res.Errors)
	t.Logf("peak RSS of the process (server and client together): %.0f MiB (%.0f MiB before the load)", peak, before)
	if res.Lost != 0 || res.Duplicated != 0 || res.Errors != 0 {
		t.Fatalf("lost %d, duplicated %d, errors %d", res.Lost, res.Duplicated, res.Errors)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
