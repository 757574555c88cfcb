package pytool

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"gorstar/internal/testenv"
)

// Open with exec.endpoints gives a client of the nodes that answer: a dead node is reported and
// passed over, a node answering 500 has its calls served by another, and a list where none
// answers is one error naming the key and each node.
func TestOpenEndpoints(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	p := newTestPool(t, testConfig())
	live := httptest.NewServer(NewServer(p))
	defer live.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	var broken atomic.Int64 // calls the node answering 500 got
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.Write([]byte(`{"ok":true}`))
			return
		}
		broken.Add(1)
		http.Error(w, "worker lost", http.StatusInternalServerError)
	}))
	defer sick.Close()

	cfg := Options{Endpoints: []string{deadURL, sick.URL, live.URL}}
	var warnings []string
	tools, err := Open(context.Background(), cfg, func(s string) { warnings = append(warnings, s) })
	if err != nil {
		t.Fatal(err)
	}
	defer tools.Close()
	if _, ok := tools.(*Client); !ok {
		t.Fatalf("Open with endpoints gave %T, want a *Client", tools)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], deadURL) || !strings.HasPrefix(warnings[0], "exec.endpoints: ") {
		t.Errorf("warnings %q, want one naming %s", warnings, deadURL)
	}
	ctx := context.Background()
	for i := range 6 {
		if r := tools.Run(ctx, Call{Code: fmt.Sprint(i)}); r.Status != StatusOK || r.Stdout != fmt.Sprintf("%d\n", i) {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
	calls := make([]Call, 100)
	for i := range calls {
		calls[i] = Call{Code: fmt.Sprint(i)}
	}
	for i, r := range tools.RunBatch(ctx, calls) {
		if r.Stdout != fmt.Sprintf("%d\n", i) {
			t.Fatalf("batch result %d: %+v", i, r)
		}
	}
	if broken.Load() == 0 {
		t.Error("the node answering 500 got no call: the retry was not exercised")
	}

	_, err = Open(ctx, Options{Endpoints: []string{deadURL, deadURL + "0"}}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "exec.endpoints: none of the 2 servers answers") ||
		!strings.Contains(err.Error(), deadURL+":") || !strings.Contains(err.Error(), deadURL+"0:") || strings.Contains(err.Error(), "\n") {
		t.Errorf("no node answering: %v", err)
	}
	if _, err := Open(ctx, Options{Endpoints: []string{"localhost:1"}}, nil); err == nil || !strings.HasPrefix(err.Error(), "exec.endpoints: ") {
		t.Errorf("an endpoint without a scheme: %v", err)
	}
}

// Calls are spread by outstanding calls per worker: a node with four workers takes four calls for
// each one a node with one worker takes, whichever comes first in the list.
func TestClientWeighsNodesByWorkers(t *testing.T) {
	small := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"ok":true,"workers":1}`))
	}))
	defer small.Close()
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"ok":true,"workers":4}`))
	}))
	defer big.Close()
	tools, err := Open(context.Background(), Options{Endpoints: []string{small.URL, big.URL}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := tools.(*Client)
	got := map[string]int{}
	for range 10 { // calls that stay outstanding: each pick adds one to its node
		e := c.pick(nil)
		e.outstanding.Add(1)
		got[e.url]++
	}
	if got[small.URL] != 2 || got[big.URL] != 8 {
		t.Errorf("10 outstanding calls went %d to the 1-worker node and %d to the 4-worker one, want 2 and 8",
			got[small.URL], got[big.URL])
	}
}
