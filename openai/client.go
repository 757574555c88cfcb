package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"gorstar/tokenizer"
)

// Options configure a Client. Zero values pick the defaults shown.
type Options struct {
	// Endpoints are the servers' base URLs (http://host:port; a trailing /v1 is dropped).
	Endpoints []string
	// Model is the served model name requests carry (empty: the server's only model).
	Model string
	// Tokenizer reads the text of servers that return no token ids (optional otherwise).
	Tokenizer *tokenizer.Tokenizer
	// Timeout bounds one attempt of a request (default 10 minutes: a long generation).
	Timeout time.Duration
	// Rounds is how many times a request may go round every endpoint before it fails (default 3).
	Rounds int
	// Backoff is the wait before the second round, doubled for each round after (default 100 ms).
	Backoff time.Duration
	// ScrapeEvery is the period of the /metrics scrape that steers dispatch (default 1 s;
	// negative: no scrape, for one endpoint or servers without /metrics).
	ScrapeEvery time.Duration
	// DeadFor is how long an endpoint that could not be reached gets no requests before it is tried
	// again (default 5 s; a successful scrape brings it back sooner).
	DeadFor time.Duration
	// WeightHook is a command run once per endpoint, for servers without update_weights_from_disk,
	// to make them load new weights. It gets GORSTAR_ENDPOINT, GORSTAR_WEIGHTS_DIR and
	// GORSTAR_WEIGHT_VERSION in its environment; exit status 0 means done.
	WeightHook []string
	// Warn receives one line per endpoint problem that a retry absorbed (nil: dropped).
	Warn func(string)
	// HTTP is the client requests go through (default: a new one; attempts carry their own timeout).
	HTTP *http.Client
}

// Client spreads requests over OpenAI-compatible endpoints. It is safe for concurrent use; Close
// stops its metrics scrape.
type Client struct {
	opts Options
	http *http.Client
	eps  []*endpoint

	mu       sync.Mutex // guards the endpoints' state and sessions
	sessions map[string]*endpoint
	next     int       // rotates ties in least-outstanding dispatch
	weights  weightSet // the last weights pushed, for endpoints that missed them

	stop context.CancelFunc
	done chan struct{}
}

// New returns a client over opts.Endpoints and starts scraping their metrics.
func New(opts Options) (*Client, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("openai: no endpoint given")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Minute
	}
	if opts.Rounds <= 0 {
		opts.Rounds = 3
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 100 * time.Millisecond
	}
	if opts.ScrapeEvery == 0 {
		opts.ScrapeEvery = time.Second
	}
	if opts.DeadFor <= 0 {
		opts.DeadFor = 5 * time.Second
	}
	c := &Client{opts: opts, http: opts.HTTP, sessions: map[string]*endpoint{}, done: make(chan struct{})}
	if c.http == nil {
		c.http = &http.Client{}
	}
	seen := map[string]bool{}
	for _, raw := range opts.Endpoints {
		u, err := baseURL(raw)
		if err != nil {
			return nil, err
		}
		if seen[u] {
			return nil, fmt.Errorf("openai: endpoint %s is given twice", u)
		}
		seen[u] = true
		c.eps = append(c.eps, &endpoint{url: u})
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	go c.scrapeLoop(ctx)
	return c, nil
}

// baseURL checks an endpoint address and drops a trailing slash and /v1.
func baseURL(raw string) (string, error) {
	u := strings.TrimRight(strings.TrimSpace(raw), "/")
	u = strings.TrimSuffix(u, "/v1")
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") || len(u) <= len("https://") {
		return "", fmt.Errorf("openai: endpoint %q is not an http:// or https:// URL", raw)
	}
	return u, nil
}

// Close stops the metrics scrape. Requests in flight finish.
func (c *Client) Close() {
	c.stop()
	<-c.done
}

// Endpoints returns the endpoints' base URLs.
func (c *Client) Endpoints() []string {
	out := make([]string, len(c.eps))
	for i, ep := range c.eps {
		out[i] = ep.url
	}
	return out
}

func (c *Client) warn(format string, args ...any) {
	if c.opts.Warn != nil {
		c.opts.Warn(fmt.Sprintf(format, args...))
	}
}
