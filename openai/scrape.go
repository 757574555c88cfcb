package openai

import (
	"bytes"
	"context"
	"errors"
	"time"
)

// scrapeLoop reads every endpoint's /metrics each ScrapeEvery until ctx ends, the first time one
// period after New (a caller that wants loads at once calls ScrapeNow).
func (c *Client) scrapeLoop(ctx context.Context) {
	defer close(c.done)
	if c.opts.ScrapeEvery < 0 {
		return
	}
	for sleep(ctx, c.opts.ScrapeEvery) == nil {
		c.ScrapeNow(ctx)
	}
}

// ScrapeNow reads every endpoint's /metrics once: the loads dispatch steers by. An endpoint that
// answers is back in service (after taking weights it missed); one that cannot be reached is out.
func (c *Client) ScrapeNow(ctx context.Context) {
	done := make(chan struct{}, len(c.eps))
	for _, ep := range c.eps {
		go func() {
			defer func() { done <- struct{}{} }()
			c.scrape(ctx, ep)
		}()
	}
	for range c.eps {
		<-done
	}
}

func (c *Client) scrape(ctx context.Context, ep *endpoint) {
	ctx, cancel := context.WithTimeout(ctx, max(c.opts.ScrapeEvery, 2*time.Second))
	defer cancel()
	data, err := c.get(ctx, ep.url+"/metrics")
	var ae *attemptError
	reached := err == nil || errors.As(err, &ae) && ae.status != 0
	if reached {
		c.catchUpWeights(ctx, ep)
	}
	load, ok := Load{}, false
	if err == nil {
		load, ok = ParseLoad(bytes.NewReader(data))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ep.load, ep.hasLoad, ep.sentSince = load, ok, 0
	switch {
	case reached:
		ep.deadUntil = time.Time{}
	case ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded):
		ep.deadUntil = time.Now().Add(c.opts.DeadFor)
	}
}
