package rollout

import (
	"net"
	"strings"
	"testing"

	"gorstar/internal/testmodel"
	"gorstar/internal/usererr"
)

// A native policy opens on the engine with its tokenizer and the concurrency it can take.
func TestOpenPolicyNative(t *testing.T) {
	p, err := OpenPolicy(ctxT(t), PolicyOptions{Model: testmodel.TinyDir(t), Concurrency: 6, Primer: "<reason>"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Engine == nil || p.Tokenizer == nil || p.Template == nil || p.Concurrency != 6 || p.Engine.Options().MaxSeqs != 6 {
		t.Fatalf("policy %+v", p)
	}
	if _, ok := p.Backend.(*EngineBackend); !ok {
		t.Fatalf("backend %T, want *EngineBackend", p.Backend)
	}
	p.Close() // twice is fine
}

// What cannot open is one line, a user error, naming what is wrong (the address of a server
// that is down).
func TestOpenPolicyRefuses(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	tok := testmodel.TinyDir(t)
	for _, c := range []struct {
		name string
		o    PolicyOptions
		want string
	}{
		{"neither", PolicyOptions{}, "give a model directory or an endpoint"},
		{"both", PolicyOptions{Model: tok, Endpoints: []string{down}}, "not both"},
		{"no served model", PolicyOptions{Endpoints: []string{down}, Tokenizer: tok}, "served model"},
		{"no tokenizer", PolicyOptions{Endpoints: []string{down}, ServedModel: "tiny"}, "tokenizer directory"},
		{"endpoint down", PolicyOptions{Endpoints: []string{down}, ServedModel: "tiny", Tokenizer: tok}, down},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenPolicy(ctxT(t), c.o)
			if err == nil || !usererr.Is(err) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v; want one user-error line with %q", err, c.want)
			}
		})
	}
}
