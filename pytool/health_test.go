package pytool

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"gorstar/internal/testenv"
	"gorstar/internal/usererr"
)

// A server that refuses connections: Health reports its error and WaitReady names it.
func TestClientHealthOfDeadServer(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // connection refused from now on
	c, err := NewClient([]string{deadURL})
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Health(context.Background()); len(h) != 1 || h[0]["url"] != deadURL || h[0]["error"] == nil || h[0]["ok"] != nil {
		t.Errorf("health %v", h)
	}
	if err := c.WaitReady(context.Background(), 0); !usererr.Is(err) {
		t.Errorf("WaitReady: %v, want a user error", err)
	}
}

// Health reports a live server's fields, in the endpoints' order, and WaitReady passes it.
func TestClientHealthOfLiveServer(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	p := newTestPool(t, testConfig())
	live := httptest.NewServer(NewServer(p))
	defer live.Close()
	c, err := NewClient([]string{live.URL, live.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Health(context.Background())
	if len(h) != 2 || h[0]["url"] != live.URL || h[0]["ok"] != true || h[0]["peak_rss_mb"] == nil || h[1]["ok"] != true {
		t.Fatalf("health %v", h)
	}
	if err := c.WaitReady(context.Background(), 0); err != nil {
		t.Errorf("WaitReady: %v", err)
	}
}
