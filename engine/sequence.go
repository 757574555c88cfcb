package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"

	"gorstar/model"
)

// FinishReason says why a sequence stopped generating.
type FinishReason string

const (
	FinishStop      FinishReason = "stop"      // a stop token or string
	FinishLength    FinishReason = "length"    // MaxTokens or the capacity
	FinishCancelled FinishReason = "cancelled" // the context ended or Cancel was called
	FinishError     FinishReason = "error"     // the engine failed (Event.Err says why)
)

// EventKind tells the events of a sequence apart.
type EventKind uint8

const (
	EventToken  EventKind = iota // a generated token with its log-probability
	EventPaused                  // a pause token or string was generated; Append and Resume follow
	EventDone                    // the sequence ended (Finish); no event follows
)

// Event is what a sequence reports, in order: tokens, then a pause or the end.
type Event struct {
	Kind    EventKind
	Token   int32   // EventToken
	LogProb float32 // EventToken: log p(Token) under the model at temperature 1, no truncation
	Finish  FinishReason
	Top     []TokenLogProb // EventToken with Request.TopLogProbs: the most likely tokens, best first
	Stop    string         // EventDone/EventPaused caused by a stop or pause string: that string
	Err     error          // EventDone with FinishError
}

type seqState uint8

const (
	stateWaiting seqState = iota // submitted, not yet admitted (no cache)
	stateRunning                 // admitted, scheduled every step
	statePaused                  // admitted, not scheduled until Resume
	stateDone
)

// Sequence is a submitted request. Its events are read with Next (or Wait); Append and Resume
// continue it after a pause; Cancel (or the Submit context ending) frees it.
type Sequence struct {
	ID  uint64
	eng *Engine
	req Request

	// Loop-owned state.
	state     seqState
	cache     *model.KVCache
	pending   []int32 // tokens to feed before the next sample
	generated int
	text      *textMatcher // nil without stop or pause strings
	rng       *rand.Rand
	stopCtx   func() bool // unregisters the context watcher
	inStep    bool        // fed in the step being built

	// turnTokens counts the tokens generated since the start or the last resume (PauseAfter).
	turnTokens int

	// Event queue shared with the reader.
	mu       sync.Mutex
	events   []Event
	closed   bool
	doneRead bool
	signal   chan struct{}
}

func (s *Sequence) emit(ev Event) {
	s.mu.Lock()
	if !s.closed {
		s.events = append(s.events, ev)
		if ev.Kind == EventDone {
			s.closed = true
		}
	}
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// Next returns the next event, blocking until there is one or ctx ends. After EventDone it
// returns io.EOF.
func (s *Sequence) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		if len(s.events) > 0 {
			ev := s.events[0]
			s.events = s.events[1:]
			if ev.Kind == EventDone {
				s.doneRead = true
			}
			s.mu.Unlock()
			return ev, nil
		}
		done := s.doneRead
		s.mu.Unlock()
		if done {
			return Event{}, io.EOF
		}
		select {
		case <-s.signal:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// TokenLogProb is a token and its log-probability.
type TokenLogProb struct {
	Token   int32
	LogProb float32
}

// Output is what a sequence generated between two pauses (or until its end).
type Output struct {
	Tokens   []int32
	LogProbs []float32
	Top      [][]TokenLogProb // per token, with Request.TopLogProbs
	Paused   bool             // the sequence waits for Append and Resume
	Finish   FinishReason     // set when it ended
	Stop     string           // the stop or pause string that matched, if any
}

// Wait collects events until the sequence pauses or ends. A sequence that ended with an error
// returns its output so far and the error.
func (s *Sequence) Wait(ctx context.Context) (Output, error) {
	var out Output
	for {
		ev, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, fmt.Errorf("wait for sequence %d: it already ended", s.ID)
		}
		if err != nil {
			return out, err
		}
		switch ev.Kind {
		case EventToken:
			out.Tokens = append(out.Tokens, ev.Token)
			out.LogProbs = append(out.LogProbs, ev.LogProb)
			if ev.Top != nil {
				out.Top = append(out.Top, ev.Top)
			}
		case EventPaused:
			out.Paused, out.Stop = true, ev.Stop
			return out, nil
		case EventDone:
			out.Finish, out.Stop = ev.Finish, ev.Stop
			return out, ev.Err
		}
	}
}

// Append queues tokens (a tool response and the scaffolding around it) after the paused sequence's
// last token; Resume prefills them and sampling continues. The tokens must fit the capacity.
func (s *Sequence) Append(tokens []int32) error { return s.eng.appendTokens(s, tokens) }

// Resume continues a paused sequence.
func (s *Sequence) Resume() error { return s.eng.resume(s) }

// Cancel ends the sequence (EventDone with FinishCancelled unless it already ended) and frees its
// cache. It is safe to call more than once and after the end.
func (s *Sequence) Cancel() { s.eng.cancel(s) }

// Events returns a channel carrying the sequence's events up to and including EventDone (or until
// ctx ends); a goroutine forwards them. Next is the allocation-free alternative.
func (s *Sequence) Events(ctx context.Context) <-chan Event {
	ch := make(chan Event, 16)
	go func() {
		defer close(ch)
		for {
			ev, err := s.Next(ctx)
			if err != nil {
				return
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
			if ev.Kind == EventDone {
				return
			}
		}
	}()
	return ch
}
