package cmd

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// `gorstar serve` answers on loopback, `gorstar chat --endpoint` talks to it, and the server stops
// cleanly when its context ends.
func TestServeAndChatEndpoint(t *testing.T) {
	dir := initTiny(t)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan cliResult, 1)
	go func() {
		r := runCLIWith(ctx, "", "serve", "--model", dir, "--listen", addr, "--kv-tokens", "8192", "--quiet")
		served <- r
	}()
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(url + "/v1/models")
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if !strings.Contains(string(body), `"id":"tiny"`) {
				t.Fatalf("/v1/models: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not come up: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := runCLIWith(ctx, "hello\n/exit\n", "chat", "--endpoint", url, "--no-tool", "--max-turn-tokens", "5", "--quiet")
	if r.Code != 0 {
		t.Fatalf("chat: %+v", r)
	}
	if !strings.HasPrefix(r.Stdout, "<reason>") {
		t.Errorf("chat printed %q", r.Stdout)
	}
	// A wrong model name is refused at start, naming the models the endpoint serves.
	r = runCLIWith(ctx, "hello\n", "chat", "--endpoint", url, "--served-model", "nope", "--no-tools", "--quiet")
	if r.Code != 1 || !strings.Contains(r.Stderr, "--served-model nope: "+url+" serves tiny") || r.Stdout != "" {
		t.Errorf("unknown served model: %+v", r)
	}
	cancel()
	select {
	case r := <-served:
		if r.Code != 0 {
			t.Errorf("serve: %+v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}
