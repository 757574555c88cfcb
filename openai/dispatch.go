package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// endpoint is one server and what the client knows of it (guarded by Client.mu).
type endpoint struct {
	url         string
	outstanding int       // requests sent and not answered
	deadUntil   time.Time // no requests before then (it could not be reached)
	load        Load      // from the last scrape, when hasLoad
	hasLoad     bool
	sentSince   int    // requests sent since that scrape, which its figures do not show yet
	version     string // weight version this client last saw it take
	stale       bool   // it missed the last weight push: no requests until it takes it
}

func (ep *endpoint) usable(now time.Time) bool { return !ep.stale && !now.Before(ep.deadUntil) }

// score is the room a new request would find: free KV cache (less what the requests sent since the
// scrape will take, estimated from the running ones), or minus the queue when requests wait.
func (ep *endpoint) score() float64 {
	if ep.load.Waiting > 0 {
		return -ep.load.Waiting - float64(ep.sentSince)
	}
	perRequest := 0.0
	if ep.load.Running > 0 {
		perRequest = ep.load.KVUsage / ep.load.Running
	}
	return 1 - ep.load.KVUsage - float64(ep.sentSince)*perRequest
}

// pick chooses the endpoint for a request of session (may be empty), skipping those in avoid, and
// counts the request as outstanding on it.
func (c *Client) pick(session string, avoid map[*endpoint]bool) *endpoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	var live []*endpoint
	for _, ep := range c.eps {
		if ep.usable(now) && !avoid[ep] {
			live = append(live, ep)
		}
	}
	ep := c.sessions[session]
	if session == "" || ep == nil || !ep.usable(now) || avoid[ep] {
		switch {
		case len(live) > 0:
			ep = c.best(live)
		default:
			ep = c.soonestBack(avoid) // every endpoint is out: try the one due back first
		}
	}
	if session != "" {
		c.sessions[session] = ep
	}
	ep.outstanding++
	ep.sentSince++
	return ep
}

// best is the live endpoint with the most room by its metrics, when every one has metrics, and
// otherwise the one with the fewest outstanding requests (ties rotate).
func (c *Client) best(live []*endpoint) *endpoint {
	allLoad := true
	for _, ep := range live {
		allLoad = allLoad && ep.hasLoad
	}
	c.next++
	var best *endpoint
	for i := range live {
		ep := live[(c.next+i)%len(live)]
		switch {
		case best == nil:
			best = ep
		case allLoad && ep.score() != best.score():
			if ep.score() > best.score() {
				best = ep
			}
		case ep.outstanding < best.outstanding:
			best = ep
		}
	}
	return best
}

func (c *Client) soonestBack(avoid map[*endpoint]bool) *endpoint {
	var best *endpoint
	for _, ep := range c.eps {
		if ep.stale || avoid[ep] {
			continue
		}
		if best == nil || ep.deadUntil.Before(best.deadUntil) {
			best = ep
		}
	}
	if best == nil { // every endpoint is avoided or stale: the first not stale, else the first
		for _, ep := range c.eps {
			if !ep.stale {
				return ep
			}
		}
		return c.eps[0]
	}
	return best
}

// finished records the end of an attempt on ep: an unreachable endpoint is taken out for DeadFor.
func (c *Client) finished(ep *endpoint, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ep.outstanding--
	if err != nil && unreachable(err) {
		ep.deadUntil = time.Now().Add(c.opts.DeadFor)
	}
}

// Forget drops a session's endpoint (the trajectory ended).
func (c *Client) Forget(session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, session)
}

// attemptError is a failed attempt: what the endpoint did and whether another try may succeed.
type attemptError struct {
	status    int // HTTP status, 0 when no answer came
	retryable bool
	err       error
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// HTTPStatus is the HTTP status of the server's answer that err reports (a 4xx comes back at
// once; 5xx and 429 only after every retry failed), or 0 when no server answered.
func HTTPStatus(err error) int {
	var ae *attemptError
	if errors.As(err, &ae) {
		return ae.status
	}
	return 0
}

// unreachable reports errors that say the server is not there: no connection, or no answer in time.
func unreachable(err error) bool {
	var ae *attemptError
	return errors.As(err, &ae) && ae.status == 0 && ae.retryable
}

// withRetries runs call on an endpoint picked for session, retrying on another with backoff while
// the failure is the server's (no connection, timeout, 5xx, 429, garbage), up to Rounds rounds of
// every endpoint. call gets a context bounded by Timeout.
func (c *Client) withRetries(ctx context.Context, session string, call func(ctx context.Context, ep *endpoint) error) error {
	last := map[*endpoint]error{}
	avoid := map[*endpoint]bool{}
	tries := c.opts.Rounds * len(c.eps)
	for try, round := 0, 0; try < tries; try++ {
		if len(avoid) == len(c.eps) { // every endpoint failed this round: back off, go round again
			round++
			clear(avoid)
			if err := sleep(ctx, c.opts.Backoff<<(round-1)); err != nil {
				return err
			}
		}
		ep := c.pick(session, avoid)
		actx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
		err := call(actx, ep)
		timedOut := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err != nil && timedOut {
			err = &attemptError{retryable: true, err: fmt.Errorf("no answer within %v", c.opts.Timeout)}
		}
		c.finished(ep, err)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ae *attemptError
		if !errors.As(err, &ae) || !ae.retryable {
			return fmt.Errorf("%s: %w", ep.url, err)
		}
		c.warn("openai: %s: %v; retrying", ep.url, err)
		last[ep] = err
		avoid[ep] = true
	}
	return allFailed(c.eps, last)
}

// allFailed is the one-line error of a request no endpoint could answer.
func allFailed(eps []*endpoint, last map[*endpoint]error) error {
	parts := make([]string, 0, len(eps))
	for _, ep := range eps {
		if err, ok := last[ep]; ok {
			parts = append(parts, fmt.Sprintf("%s (%v)", ep.url, err))
		} else {
			parts = append(parts, fmt.Sprintf("%s (not tried: out of service)", ep.url))
		}
	}
	return fmt.Errorf("openai: no endpoint answered: %s", strings.Join(parts, ", "))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// post sends a JSON body and returns the answer's body; failures come back as *attemptError.
func (c *Client) post(ctx context.Context, url string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.send(req)
}

func (c *Client) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return c.send(req)
}

func (c *Client) send(req *http.Request) ([]byte, error) {
	res, err := c.http.Do(req)
	if err != nil {
		return nil, &attemptError{retryable: true, err: connError(err)}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 256<<20))
	if err != nil {
		return nil, &attemptError{retryable: true, err: fmt.Errorf("reading the answer: %w", connError(err))}
	}
	if res.StatusCode/100 != 2 {
		retry := res.StatusCode >= 500 || res.StatusCode == http.StatusTooManyRequests
		return data, &attemptError{status: res.StatusCode, retryable: retry,
			err: fmt.Errorf("HTTP %d: %s", res.StatusCode, errorMessage(data))}
	}
	return data, nil
}

// connError shortens a transport error to what happened.
func connError(err error) error {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("connection refused")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("connection lost before the answer")
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return fmt.Errorf("unknown host %s", dns.Name)
	}
	return err
}

// errorMessage is the message of an error answer: OpenAI's error.message, SGLang's message, or the
// start of the body.
func errorMessage(body []byte) string {
	var r struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &r) == nil {
		if r.Error.Message != "" {
			return r.Error.Message
		}
		if r.Message != "" {
			return r.Message
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
