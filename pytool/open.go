package pytool

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorstar/internal/usererr"
)

// Tools runs the tool calls of a rollout, an evaluation or a chat: a Pool of workers on this
// machine, or a Client of the `gorstar exec serve` nodes of exec.endpoints.
type Tools interface {
	Runner
	SessionCloser
	Close()
}

var (
	_ Tools = (*Pool)(nil)
	_ Tools = (*Client)(nil)
)

// Open returns the tools cfg names: with cfg.Endpoints, a Client of those nodes when at least one
// answers /healthz (warn hears of each that does not: calls pass it over until it answers);
// without, a Pool started here with opts (which only a Pool takes).
func Open(ctx context.Context, cfg Options, warn func(string), opts ...PoolOption) (Tools, error) {
	if len(cfg.Endpoints) == 0 {
		p, err := NewPool(ctx, cfg, opts...)
		if err != nil {
			return nil, err // not a Tools holding a nil *Pool
		}
		return p, nil
	}
	c, err := NewClient(cfg.Endpoints)
	if err != nil {
		return nil, usererr.New("exec.endpoints: %v", strings.TrimPrefix(err.Error(), "exec client: "))
	}
	if err := c.ready(ctx, warn); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close lets go of the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// ready asks every node's /healthz (Health): the nodes that do not answer ok are marked down
// (calls pass them over until they answer) and reported to warn; none answering ok is a user
// error naming each node and why.
func (c *Client) ready(ctx context.Context, warn func(string)) error {
	health := c.Health(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	var why []string
	down := time.Now().Add(downFor).UnixNano()
	for i, h := range health {
		if h["ok"] == true {
			c.endpoints[i].noteWorkers(h)
			continue
		}
		c.endpoints[i].downUntil.Store(down)
		reason := h["error"]
		if reason == nil {
			reason = "/healthz does not say ok"
		}
		why = append(why, fmt.Sprintf("%s: %v", c.endpoints[i].url, reason))
	}
	if len(why) == len(c.endpoints) {
		return usererr.New("exec.endpoints: none of the %d servers answers (%s)", len(c.endpoints), strings.Join(why, "; "))
	}
	for _, w := range why {
		if warn != nil {
			warn(fmt.Sprintf("exec.endpoints: %s; its calls go to the others until it answers", w))
		}
	}
	return nil
}
