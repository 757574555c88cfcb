package rollout

import (
	"context"
	"errors"
	"fmt"

	"gorstar/engine"
)

// EngineBackend runs the policy on the in-process engine. End tokens become the engine's pause
// tokens, so a sequence keeps its cache whatever ends its turn. The engine needs the tokenizer
// (engine.Options.Tokenizer) for pause strings, and MaxSeqs at least the Loop's Concurrency.
type EngineBackend struct {
	Engine *engine.Engine
	// WeightVersion is recorded on every turn (the RL step whose weights the engine's model holds).
	WeightVersion int64
}

// Start submits every request at once (engine.SubmitAll), so prompts prefill together and the
// samples of a group share their prompt's cache.
func (b *EngineBackend) Start(ctx context.Context, reqs []Request) ([]Stream, error) {
	ereqs := make([]engine.Request, len(reqs))
	for i, r := range reqs {
		seed := r.Sampling.Seed
		ereqs[i] = engine.Request{
			Prompt: r.Prompt,
			// The budget counts appended tokens too, so the binding bound is the capacity: the
			// engine ends the sequence (length) when prompt + response fills it.
			MaxTokens:    r.MaxResponseTokens,
			Capacity:     len(r.Prompt) + r.MaxResponseTokens,
			Sampling:     engine.Sampling{Temperature: r.Sampling.Temperature, TopP: r.Sampling.TopP, Seed: &seed},
			PauseTokens:  r.EndTokens,
			PauseStrings: r.PauseStrings,
			PauseAfter:   r.PauseAfter,
		}
	}
	seqs, err := b.Engine.SubmitAll(ctx, ereqs)
	if err != nil {
		return nil, err
	}
	streams := make([]Stream, len(seqs))
	for i, s := range seqs {
		streams[i] = &engineStream{seq: s, version: b.WeightVersion, end: reqs[i].EndTokens}
	}
	return streams, nil
}

type engineStream struct {
	seq     *engine.Sequence
	version int64
	end     []int32
}

func (s *engineStream) Next(ctx context.Context) (Turn, error) {
	t := Turn{WeightVersion: s.version}
	for {
		ev, err := s.seq.Next(ctx)
		if err != nil {
			return t, err
		}
		switch ev.Kind {
		case engine.EventToken:
			t.Tokens = append(t.Tokens, ev.Token)
			t.LogProbs = append(t.LogProbs, ev.LogProb)
		case engine.EventPaused:
			t.End = EndPaused
			if ev.Stop == "" && closedBy(t.Tokens, s.end) {
				t.End = EndClosed
			}
			return t, nil
		case engine.EventDone:
			err := turnEnd(&t, ev)
			if err == nil && t.End == EndLength && closedBy(t.Tokens, s.end) {
				t.End = EndClosed // the budget ran out only after the model had closed its turn
			}
			return t, err
		}
	}
}

// turnEnd maps the engine's finish reason to the turn's end, or to an error.
func turnEnd(t *Turn, ev engine.Event) error {
	switch ev.Finish {
	case engine.FinishStop:
		t.End = EndClosed
	case engine.FinishLength:
		t.End = EndLength
	case engine.FinishError:
		return ev.Err
	default:
		if ev.Err != nil {
			return fmt.Errorf("sequence cancelled: %w", ev.Err)
		}
		return errors.New("sequence cancelled")
	}
	return nil
}

func (s *engineStream) Append(ctx context.Context, ids []int32) error {
	if err := s.seq.Append(ids); err != nil {
		return err
	}
	return s.seq.Resume()
}

func (s *engineStream) Close() { s.seq.Cancel() }
