package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"gorstar/internal/usererr"
)

// Client spreads calls over several `gorstar exec serve` nodes: each call goes to the endpoint
// with the fewest outstanding calls; a connection failure is retried once on another endpoint;
// a full server (429) is retried with back-off until the context ends.
type Client struct {
	endpoints []*endpoint
	http      *http.Client
	// CallTimeout bounds one HTTP exchange (default 5 minutes: queueing on a busy server included).
	CallTimeout time.Duration
	// BatchSize is the largest batch sent in one request by RunBatch (default 64, as rStar2).
	BatchSize int
}

type endpoint struct {
	url         string
	outstanding atomic.Int64
	downUntil   atomic.Int64 // unix nanoseconds; set after a connection failure
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

// pick returns the endpoint with the fewest outstanding calls, avoiding skip when possible.
func (c *Client) pick(skip *endpoint) *endpoint {
	now := time.Now().UnixNano()
	var best *endpoint
	bestDown := true
	for _, e := range c.endpoints {
		if e == skip && len(c.endpoints) > 1 {
			continue
		}
		down := e.downUntil.Load() > now
		switch {
		case best == nil, bestDown && !down:
		case down && !bestDown, e.outstanding.Load() >= best.outstanding.Load():
			continue
		}
		best, bestDown = e, down
	}
	return best
}

// errBusy is a 429 answer.
var errBusy = errors.New("server queue full")

// post sends body to path on the least-loaded endpoint, retrying as the Client doc says, and
// decodes the answer into out.
func (c *Client) post(ctx context.Context, path string, body []byte, weight int64, out any) error {
	var last *endpoint
	retried := false
	backoff := 10 * time.Millisecond
	for {
		e := c.pick(last)
		e.outstanding.Add(weight)
		err := c.postOnce(ctx, e, path, body, out)
		e.outstanding.Add(-weight)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errBusy):
			select {
			case <-time.After(backoff):
				backoff = min(2*backoff, time.Second)
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		case ctx.Err() != nil:
			return ctx.Err()
		case isConnectionFailure(err) && !retried:
			e.downUntil.Store(time.Now().Add(downFor).UnixNano())
			retried, last = true, e
			continue
		default:
			return err
		}
	}
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
	var r Result
	if err := c.post(ctx, "/v1/run", body, 1, &r); err != nil {
		return internalResult("exec client: %v", err)
	}
	return r
}

// RunBatch sends calls in batches of BatchSize, spread over the endpoints concurrently, and
// returns the results in order.
func (c *Client) RunBatch(ctx context.Context, calls []Call) []Result {
	out := make([]Result, len(calls))
	size := max(c.BatchSize, 1)
	done := make(chan struct{})
	n := 0
	for lo := 0; lo < len(calls); lo += size {
		hi := min(lo+size, len(calls))
		n++
		go func(lo, hi int) {
			defer func() { done <- struct{}{} }()
			body, err := json.Marshal(BatchRequest{Calls: calls[lo:hi]})
			var resp BatchResponse
			if err == nil {
				err = c.post(ctx, "/v1/batch", body, int64(hi-lo), &resp)
			}
			if err == nil && len(resp.Results) != hi-lo {
				err = fmt.Errorf("batch of %d calls answered with %d results", hi-lo, len(resp.Results))
			}
			for i := lo; i < hi; i++ {
				if err != nil {
					out[i] = internalResult("exec client: %v", err)
				} else {
					out[i] = resp.Results[i-lo]
				}
			}
		}(lo, hi)
	}
	for ; n > 0; n-- {
		<-done
	}
	return out
}
