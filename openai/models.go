package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Models returns the model ids each endpoint's /v1/models lists, by base URL. An endpoint that
// does not answer is an error naming it.
func (c *Client) Models(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []string
	for _, ep := range c.eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids, err := c.listModels(ctx, ep.url)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s (%v)", ep.url, err))
				return
			}
			out[ep.url] = ids
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		slices.Sort(errs)
		return out, fmt.Errorf("openai: list models: %s", strings.Join(errs, ", "))
	}
	return out, nil
}

func (c *Client) listModels(ctx context.Context, base string) ([]string, error) {
	data, err := c.get(ctx, base+"/v1/models")
	if err != nil {
		return nil, err
	}
	var r ModelList
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("/v1/models is not a model list: %v", err)
	}
	ids := make([]string, len(r.Data))
	for i, m := range r.Data {
		ids[i] = m.ID
	}
	return ids, nil
}

// CheckModel fails, naming the endpoint and what it lists, when an endpoint does not serve the
// client's model (Options.Model), or when none answers.
func (c *Client) CheckModel(ctx context.Context) error {
	lists, err := c.Models(ctx)
	if len(lists) == 0 {
		return err
	}
	for _, ep := range c.eps {
		ids, ok := lists[ep.url]
		if ok && c.opts.Model != "" && !slices.Contains(ids, c.opts.Model) {
			return fmt.Errorf("openai: served model %q is not listed by %s; the server lists: %s",
				c.opts.Model, ep.url, strings.Join(ids, ", "))
		}
	}
	if err != nil {
		c.warn("%v", err) // some are down: dispatch works around them
	}
	return nil
}
