package engine

import (
	"context"
	"fmt"
	"sync"

	"gorstar/model"
)

// WithModel runs f on the engine's goroutine between two steps, while no step runs, and hands it
// the engine's model. It is how a trainer updates the weights between rollout batches (RL
// alternates generation and training on one model): f may train in place (ForwardBackward and an
// optimizer step) or write Params directly (a weight sync). Afterwards WithModel calls
// m.WeightsChanged, so the decoders repack the weights whatever f did.
//
// Sequences still waiting or admitted are kept and go on with the new weights, their KV caches
// holding the old weights' keys and values: for on-policy rollouts call WithModel between batches,
// when no sequence is in flight. Generation waits while f runs. If ctx ends before f starts (while
// a step runs), f never runs and WithModel returns ctx's error; once f has started it runs to the
// end. A panic in f is returned as an error.
func (e *Engine) WithModel(ctx context.Context, f func(m *model.Model) error) error {
	var (
		mu                 sync.Mutex
		started, abandoned bool
	)
	ran := make(chan error, 1)
	job := func() {
		mu.Lock()
		if abandoned {
			mu.Unlock()
			return
		}
		started = true
		mu.Unlock()
		defer e.m.WeightsChanged()
		defer func() {
			if p := recover(); p != nil {
				ran <- fmt.Errorf("engine: update the model: panic: %v", p)
			}
		}()
		ran <- f(e.m)
	}
	select {
	case e.cmds <- job:
	case <-ctx.Done():
		return ctx.Err()
	case <-e.done:
		return ErrClosed
	}
	select {
	case err := <-ran:
		return err
	case <-e.done:
		return ranOr(ran, ErrClosed)
	case <-ctx.Done():
		mu.Lock()
		abandoned = !started
		mu.Unlock()
		if abandoned {
			return ctx.Err()
		}
		select {
		case err := <-ran:
			return err
		case <-e.done:
			return ranOr(ran, ErrClosed)
		}
	}
}

// ranOr is f's result if it ran (the loop may have stopped right after), else err.
func ranOr(ran <-chan error, err error) error {
	select {
	case r := <-ran:
		return r
	default:
		return err
	}
}
