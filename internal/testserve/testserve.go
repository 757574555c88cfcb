// Package testserve starts real `gorstar serve` servers on 127.0.0.1 for tests of the packages
// that talk to one (openai, rl): the model, its engine and the HTTP server are closed when the test
// ends.
package testserve

import (
	"net"
	"net/http"
	"sync"
	"testing"

	"gorstar/engine"
	"gorstar/serve"
	"gorstar/tokenizer"
)

// Engine loads the model directory dir and starts an engine over it (engine.LoadPolicy: opts.Tokenizer
// is set to the directory's tokenizer), closed when the test ends.
func Engine(t testing.TB, dir string, opts engine.Options) (*engine.Engine, *tokenizer.Tokenizer) {
	t.Helper()
	p, err := engine.LoadPolicy(dir, engine.PolicyOptions{Engine: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p.Engine, p.Tokenizer
}

// Server is a running gorstar serve.
type Server struct {
	URL    string
	Engine *engine.Engine
	hs     *http.Server
	once   sync.Once
}

// Kill drops the server and its connections at once (also done when the test ends).
func (s *Server) Kill() { s.once.Do(func() { s.hs.Close() }) }

// Start serves the model of dir on a free loopback port.
func Start(t testing.TB, dir string, eo engine.Options, so serve.Options) *Server {
	t.Helper()
	eng, tok := Engine(t, dir, eo)
	srv, err := serve.New(eng, tok, so)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), Engine: eng, hs: &http.Server{Handler: srv.Handler()}}
	go s.hs.Serve(ln)
	t.Cleanup(s.Kill)
	return s
}
