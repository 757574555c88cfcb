package pytool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorstar/internal/usererr"
)

// Client spreads calls over several `gorstar exec serve` nodes: each call goes to the endpoint
// with the fewest outstanding calls per worker (a node's workers are known once Open has asked
// its /healthz; until then each counts as one); a connection failure or a 5xx is retried on the other
// endpoints (post says how often); a full server (429) is retried with back-off until the
// context ends. The calls of a session stay on the endpoint that holds its interpreter; when that
// one is down they move to another, where the session starts afresh (its state is lost, as when
// a session times out).
type Client struct {
	endpoints []*endpoint
	http      *http.Client
	sessions  sync.Map // session name -> *endpoint holding its interpreter
	// CallTimeout bounds one HTTP exchange (default 5 minutes: queueing on a busy server included).
	CallTimeout time.Duration
	// BatchSize is the largest batch sent in one request by RunBatch (default 64, as rStar2).
	BatchSize int
}

type endpoint struct {
	url         string
	outstanding atomic.Int64
	workers     atomic.Int64 // from its /healthz when Open asked; 0 = not known (counts as 1)
	downUntil   atomic.Int64 // unix nanoseconds; set after a connection failure
}

// noteWorkers keeps the worker count of a node's /healthz answer, by which calls are spread.
func (e *endpoint) noteWorkers(health map[string]any) {
	if w, ok := health["workers"].(float64); ok && w >= 1 {
		e.workers.Store(int64(w))
	}
}

// lessLoaded says whether e has fewer outstanding calls per worker than f.
func (e *endpoint) lessLoaded(f *endpoint) bool {
	we, wf := max(e.workers.Load(), 1), max(f.workers.Load(), 1)
	return e.outstanding.Load()*wf < f.outstanding.Load()*we
}

// downFor is how long an endpoint that refused a connection is passed over.
const downFor = 2 * time.Second

// NewClient returns a client for the servers at urls (http://host:port).
func NewClient(urls []string) (*Client, error) {
	if len(urls) == 0 {
		return nil, usererr.New("exec client: no endpoint given")
	}
	c := &Client{CallTimeout: 5 * time.Minute, BatchSize: 64,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxConnsPerHost: 0,
			IdleConnTimeout: 90 * time.Second}}}
	for _, u := range urls {
		for _, one := range strings.Split(u, ",") {
			one = strings.TrimRight(strings.TrimSpace(one), "/")
			if one == "" {
				continue
			}
			if p, err := url.Parse(one); err != nil || p.Host == "" || (p.Scheme != "http" && p.Scheme != "https") {
				return nil, usererr.New("exec client: endpoint %q: want http://HOST:PORT", one)
			}
			c.endpoints = append(c.endpoints, &endpoint{url: one})
		}
	}
	if len(c.endpoints) == 0 {
		return nil, usererr.New("exec client: no endpoint given")
	}
	return c, nil
}

// pick returns the endpoint with the fewest outstanding calls per worker, preferring ones not
// down and not in tried.
func (c *Client) pick(tried []*endpoint) *endpoint {
	now := time.Now().UnixNano()
	var best *endpoint
	bestRank := 0
	for _, e := range c.endpoints {
		rank := 0 // lower is better: 0 up and untried, 1 down, 2 tried
		if slices.Contains(tried, e) {
			rank = 2
		} else if e.downUntil.Load() > now {
			rank = 1
		}
		if best == nil || rank < bestRank || (rank == bestRank && e.lessLoaded(best)) {
			best, bestRank = e, rank
		}
	}
	return best
}

// errBusy is a 429 answer.
var errBusy = errors.New("server queue full")

// post sends body to path on prefer while it is up (a session's endpoint), else on the
// least-loaded endpoint, and decodes the answer into out; it returns the endpoint that gave it.
// A connection failure or a 5xx marks the endpoint down for a while and the request goes to one
// not tried yet; once every endpoint has failed it, it waits (10 ms, doubling to 1 s) and goes
// round again, for at most two more failures beyond one per endpoint. A 429 is retried with the
// same back-off until ctx ends.
func (c *Client) post(ctx context.Context, path string, body []byte, weight int64, out any, prefer *endpoint) (*endpoint, error) {
	var tried []*endpoint
	failures, maxFailures := 0, len(c.endpoints)+2
	backoff := 10 * time.Millisecond
	wait := func() error {
		select {
		case <-time.After(backoff):
			backoff = min(2*backoff, time.Second)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		e := prefer
		if e == nil || e.downUntil.Load() > time.Now().UnixNano() {
			e = c.pick(tried)
		}
		e.outstanding.Add(weight)
		err := c.postOnce(ctx, e, path, body, out)
		e.outstanding.Add(-weight)
		switch {
		case err == nil:
			return e, nil
		case errors.Is(err, errBusy):
			if err := wait(); err != nil {
				return nil, err
			}
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case retryable(err) && failures < maxFailures:
			failures++
			e.downUntil.Store(time.Now().Add(downFor).UnixNano())
			tried, prefer = append(tried, e), nil
			if len(tried) == len(c.endpoints) {
				tried = tried[:0]
				if err := wait(); err != nil {
					return nil, err
				}
			}
		default:
			return nil, err
		}
	}
}

// serverError is a 5xx answer: the server is unwell, not the request.
type serverError struct{ err error }

func (e serverError) Error() string { return e.err.Error() }

// retryable says whether another endpoint may answer where this one failed.
func retryable(err error) bool {
	var se serverError
	return isConnectionFailure(err) || errors.As(err, &se)
}

type connectionError struct{ err error }

func (e connectionError) Error() string { return e.err.Error() }
func (e connectionError) Unwrap() error { return e.err }

func isConnectionFailure(err error) bool {
	var ce connectionError
	return errors.As(err, &ce)
}

func (c *Client) postOnce(ctx context.Context, e *endpoint, path string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.CallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return connectionError{fmt.Errorf("POST %s%s: %w", e.url, path, err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return connectionError{fmt.Errorf("POST %s%s: read answer: %w", e.url, path, err)}
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return errBusy
	case resp.StatusCode >= 500:
		return serverError{fmt.Errorf("POST %s%s: %s: %s", e.url, path, resp.Status, bytes.TrimSpace(data))}
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("POST %s%s: %s: %s", e.url, path, resp.Status, bytes.TrimSpace(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s%s: decode answer: %w", e.url, path, err)
	}
	return nil
}

// Run sends one call. Transport failures come back as StatusInternal.
func (c *Client) Run(ctx context.Context, call Call) Result {
	body, err := json.Marshal(call)
	if err != nil {
		return internalResult("encode call: %v", err)
	}
	var prefer *endpoint
	if call.Session != "" {
		if e, ok := c.sessions.Load(call.Session); ok {
			prefer = e.(*endpoint)
		}
	}
	var r Result
	e, err := c.post(ctx, "/v1/run", body, 1, &r, prefer)
	if err != nil {
		return internalResult("exec client: %v", err)
	}
	if call.Session != "" {
		c.sessions.Store(call.Session, e)
	}
	return r
}

// RunBatch sends the stateless calls in batches of BatchSize, spread over the endpoints
// concurrently, and each session call on its own (to its session's endpoint), and returns the
// results in order.
func (c *Client) RunBatch(ctx context.Context, calls []Call) []Result {
	out := make([]Result, len(calls))
	var stateless, session []int // indices into calls
	var sessionCalls []Call
	for i, call := range calls {
		if call.Session == "" {
			stateless = append(stateless, i)
		} else {
			session, sessionCalls = append(session, i), append(sessionCalls, call)
		}
	}
	var wg sync.WaitGroup
	if len(session) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k, r := range runConcurrently(ctx, c, sessionCalls) {
				out[session[k]] = r
			}
		}()
	}
	size := max(c.BatchSize, 1)
	for lo := 0; lo < len(stateless); lo += size {
		idx := stateless[lo:min(lo+size, len(stateless))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			batch := make([]Call, len(idx))
			for k, i := range idx {
				batch[k] = calls[i]
			}
			body, err := json.Marshal(BatchRequest{Calls: batch})
			var resp BatchResponse
			if err == nil {
				_, err = c.post(ctx, "/v1/batch", body, int64(len(idx)), &resp, nil)
			}
			if err == nil && len(resp.Results) != len(idx) {
				err = fmt.Errorf("batch of %d calls answered with %d results", len(idx), len(resp.Results))
			}
			for k, i := range idx {
				if err != nil {
					out[i] = internalResult("exec client: %v", err)
				} else {
					out[i] = resp.Results[k]
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// CloseSession ends session name's interpreter on the endpoint that holds it (best effort: an
// endpoint that cannot be reached ends it at its idle timeout).
func (c *Client) CloseSession(name string) {
	e, ok := c.sessions.LoadAndDelete(name)
	if !ok {
		return
	}
	body, _ := json.Marshal(CloseSessionRequest{Session: name}) // a struct of one string: cannot fail
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var answer map[string]bool
	_ = c.postOnce(ctx, e.(*endpoint), "/v1/sessions/close", body, &answer)
}
