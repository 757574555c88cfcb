package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// weightSet is the last weights pushed: an endpoint that missed them takes them before it serves.
type weightSet struct {
	dir, version string
	given        bool
	push         sync.Mutex // one push to the servers at a time
}

// UpdateWeightsFromDisk makes every endpoint load the safetensors in dir (a directory the servers
// can read) and label them version: SGLang's and gorstar serve's POST /update_weights_from_disk, or
// Options.WeightHook for servers without it (vLLM). An endpoint that cannot be reached gets no
// requests until it has taken the weights (the scrape retries). The error names every endpoint
// that refused the weights, or all of them when none took them.
func (c *Client) UpdateWeightsFromDisk(ctx context.Context, dir, version string) error {
	c.weights.push.Lock()
	defer c.weights.push.Unlock()
	c.mu.Lock()
	c.weights.dir, c.weights.version, c.weights.given = dir, version, true
	c.mu.Unlock()
	type result struct {
		ep  *endpoint
		err error
	}
	results := make(chan result, len(c.eps))
	for _, ep := range c.eps {
		go func() { results <- result{ep, c.pushWeights(ctx, ep, dir, version)} }()
	}
	var refused, down []string
	took := 0
	for range c.eps {
		r := <-results
		switch {
		case r.err == nil:
			took++
		case unreachable(r.err):
			down = append(down, fmt.Sprintf("%s (%v)", r.ep.url, r.err))
		default:
			refused = append(refused, fmt.Sprintf("%s (%v)", r.ep.url, r.err))
		}
	}
	if len(refused) > 0 || took == 0 {
		return fmt.Errorf("openai: update weights from %s: %s", dir, strings.Join(append(refused, down...), ", "))
	}
	if len(down) > 0 {
		c.warn("openai: weights %s reach %s when it is back", version, strings.Join(down, ", "))
	}
	return nil
}

// pushWeights makes one endpoint load dir and records the outcome: stale until it succeeds.
func (c *Client) pushWeights(ctx context.Context, ep *endpoint, dir, version string) error {
	got, err := c.loadWeights(ctx, ep, dir, version)
	c.mu.Lock()
	defer c.mu.Unlock()
	ep.stale = err != nil
	if err == nil {
		ep.version = got
	}
	return err
}

// loadWeights asks the server, or runs the hook where the server has no such endpoint, and
// returns the weight version the server reports (version when it reports none).
func (c *Client) loadWeights(ctx context.Context, ep *endpoint, dir, version string) (string, error) {
	js, _ := json.Marshal(UpdateWeightsRequest{ModelPath: dir, WeightVersion: version})
	data, err := c.post(ctx, ep.url+"/update_weights_from_disk", js)
	var ae *attemptError
	if errors.As(err, &ae) && (ae.status == http.StatusNotFound || ae.status == http.StatusMethodNotAllowed) {
		if len(c.opts.WeightHook) == 0 {
			return "", fmt.Errorf("the server has no /update_weights_from_disk (vLLM?): give a weight hook command (rollout.weight_hook)")
		}
		return version, c.runHook(ctx, ep, dir, version)
	}
	var r UpdateWeightsResponse
	if jerr := json.Unmarshal(data, &r); jerr != nil || !r.Success {
		if err == nil {
			err = fmt.Errorf("the server did not load the weights: %s", strings.TrimSpace(string(data)))
		}
		if r.Message != "" && ae != nil {
			ae.err = errors.New(r.Message) // SGLang's reason, not the HTTP status
		}
		return "", err
	}
	if v := versionString(r.WeightVersion); v != "" {
		return v, nil
	}
	return version, nil
}

func (c *Client) runHook(ctx context.Context, ep *endpoint, dir, version string) error {
	cmd := exec.CommandContext(ctx, c.opts.WeightHook[0], c.opts.WeightHook[1:]...)
	cmd.Env = append(os.Environ(), "GORSTAR_ENDPOINT="+ep.url, "GORSTAR_WEIGHTS_DIR="+dir, "GORSTAR_WEIGHT_VERSION="+version)
	out, err := cmd.CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("weight hook %s: %v: %s", c.opts.WeightHook[0], err, lines[len(lines)-1])
	}
	return nil
}

// catchUpWeights pushes the last weights to an endpoint that missed them, now that it answers.
func (c *Client) catchUpWeights(ctx context.Context, ep *endpoint) {
	c.mu.Lock()
	stale, given, dir, version := ep.stale, c.weights.given, c.weights.dir, c.weights.version
	c.mu.Unlock()
	if !stale || !given {
		return
	}
	if !c.weights.push.TryLock() {
		return // a push is under way; it reaches this endpoint too
	}
	defer c.weights.push.Unlock()
	if err := c.pushWeights(ctx, ep, dir, version); err != nil {
		c.warn("openai: %s is back but did not take weights %s: %v", ep.url, version, err)
	}
}
