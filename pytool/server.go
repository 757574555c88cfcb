package pytool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"gorstar/internal/jsonerr"
	"gorstar/internal/plainjson"
)

// Server serves a Pool over HTTP (cli.md: POST /v1/run, POST /v1/batch, GET /healthz,
// GET /metrics; and POST /v1/sessions/close). Admission is bounded: a call that would take the
// number of admitted calls past the pool's workers plus its queue size is refused at once with 429.
type Server struct {
	pool     *Pool
	capacity int64
	inflight atomic.Int64
	mux      *http.ServeMux
}

// maxRequestBytes bounds a request body (a batch of 64 calls with large inputs fits easily).
const maxRequestBytes = 64 << 20

// NewServer returns the HTTP handler for pool.
func NewServer(pool *Pool) *Server {
	s := &Server{pool: pool, capacity: int64(pool.Workers() + pool.cfg.QueueSize), mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /v1/run", s.handleRun)
	s.mux.HandleFunc("POST /v1/batch", s.handleBatch)
	s.mux.HandleFunc("POST /v1/sessions/close", s.handleCloseSession)
	s.mux.HandleFunc("GET /healthz", s.handleHealth)
	s.mux.HandleFunc("GET /health", s.handleHealth) // the spelling gorstar serve and vLLM use
	s.mux.HandleFunc("GET /metrics", s.handleMetrics)
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// admit reserves n call slots, or reports that the queue is full.
func (s *Server) admit(n int64) bool {
	for {
		cur := s.inflight.Load()
		if cur+n > s.capacity {
			s.pool.stats.rejected.Add(n)
			return false
		}
		if s.inflight.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// BatchRequest is the body of POST /v1/batch.
type BatchRequest struct {
	Calls []Call `json:"calls"`
}

// BatchResponse is its answer: one result per call, in order.
type BatchResponse struct {
	Results []Result `json:"results"`
}

func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	var c Call
	if err := decodeBody(w, r, &c); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !s.admit(1) {
		writeError(w, http.StatusTooManyRequests, "queue full: retry later")
		return
	}
	defer s.inflight.Add(-1)
	plainjson.WriteHTTP(w, http.StatusOK, s.pool.Run(r.Context(), c))
}

func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request) {
	var b BatchRequest
	if err := decodeBody(w, r, &b); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	n := int64(len(b.Calls))
	if n > s.capacity {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("batch of %d calls is larger than the server's capacity %d", n, s.capacity))
		return
	}
	if !s.admit(n) {
		writeError(w, http.StatusTooManyRequests, "queue full: retry later")
		return
	}
	defer s.inflight.Add(-n)
	plainjson.WriteHTTP(w, http.StatusOK, BatchResponse{Results: s.pool.RunBatch(r.Context(), b.Calls)})
}

// CloseSessionRequest is the body of POST /v1/sessions/close.
type CloseSessionRequest struct {
	Session string `json:"session"`
}

// handleCloseSession ends a session's interpreter; ending one that does not exist (never started,
// timed out, already closed) is not an error.
func (s *Server) handleCloseSession(w http.ResponseWriter, r *http.Request) {
	var c CloseSessionRequest
	if err := decodeBody(w, r, &c); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if c.Session == "" {
		writeError(w, http.StatusBadRequest, `request body: field "session": want a non-empty session name`)
		return
	}
	s.pool.CloseSession(c.Session)
	plainjson.WriteHTTP(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	rss, peak := memoryMB()
	plainjson.WriteHTTP(w, http.StatusOK, map[string]any{"ok": true, "workers": s.pool.Workers(), "sandbox": s.pool.Sandbox(),
		"inflight": s.inflight.Load(), "capacity": s.capacity, "rss_mb": rss, "peak_rss_mb": peak})
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	s.pool.stats.WritePrometheus(w, s.pool.Workers(), s.inflight.Load())
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg, _ := jsonerr.Describe(err)
		return fmt.Errorf("request body: %s", msg)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("invalid JSON body: more than one value")
	}
	return nil
}

func writeError(w http.ResponseWriter, code int, msg string) {
	plainjson.WriteHTTP(w, code, map[string]string{"error": msg})
}

// Serve listens on addr and serves pool until ctx ends, then shuts down gracefully: it stops
// accepting, finishes every admitted call and answers it, then returns. ready (optional) gets
// the bound address once listening.
func Serve(ctx context.Context, addr string, pool *Pool, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("exec serve: listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: NewServer(pool), ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("exec serve %s: %w", addr, err)
	case <-ctx.Done():
	}
	// In-flight calls are bounded by the pool's timeouts; give them that long and a margin.
	grace := pool.cfg.Timeout*time.Duration(1+pool.cfg.QueueSize/max(pool.Workers(), 1)) + 10*time.Second
	shutCtx, cancel := context.WithTimeout(context.Background(), min(grace, 10*time.Minute))
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("exec serve %s: shutdown: %w", addr, err)
	}
	return nil
}

// memoryMB returns this process's resident and peak resident memory in MiB (0 when unknown).
func memoryMB() (rss, peak float64) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return rss, peak
}
