package pytool

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"gorstar/internal/usererr"
)

// healthTimeout bounds one /healthz exchange.
const healthTimeout = 10 * time.Second

// readyPoll is how often WaitReady asks a server that is not ready yet.
const readyPoll = 250 * time.Millisecond

// Health fetches every endpoint's GET /healthz, all at once, and returns the answers in the order
// the endpoints were given: the server's fields (ok, workers, sandbox, inflight, capacity, rss_mb,
// peak_rss_mb) plus "url", or "url" and "error" when the server did not answer.
func (c *Client) Health(ctx context.Context) []map[string]any {
	out := make([]map[string]any, len(c.endpoints))
	var wg sync.WaitGroup
	for i, e := range c.endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = c.health(ctx, e.url)
		}()
	}
	wg.Wait()
	return out
}

func (c *Client) health(ctx context.Context, url string) map[string]any {
	out := map[string]any{"url": url}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
	if err != nil {
		out["error"] = err.Error()
		return out
	}
	resp, err := c.http.Do(req)
	if err != nil {
		out["error"] = err.Error()
		return out
	}
	defer resp.Body.Close()
	var h map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		out["error"] = fmt.Sprintf("GET %s/healthz: %s: %v", url, resp.Status, err)
		return out
	}
	for k, v := range h {
		out[k] = v
	}
	return out
}

// WaitReady waits until every endpoint answers /healthz with ok: a server that was just started
// may still be importing its modules, and a benchmark or a rollout should not begin with refused
// connections. A server not ready within limit is a user error naming it; ctx ending returns
// ctx's error.
func (c *Client) WaitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for _, e := range c.endpoints {
		for {
			h := c.health(ctx, e.url)
			if h["ok"] == true {
				e.noteWorkers(h)
				break
			}
			if time.Now().After(deadline) {
				return usererr.New("exec server %s: not ready after %s: %v", e.url, limit, h["error"])
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(readyPoll):
			}
		}
	}
	return nil
}
