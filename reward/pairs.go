package reward

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"gorstar/internal/jsonerr"
	"gorstar/internal/plainjson"
	"gorstar/internal/usererr"
)

// Pair is one line of a grading input (`gorstar reward grade`): a JSON object with a "response"
// and its reference "answer" (a string, or a number taken as its text), optionally "truncated". Its
// other fields are kept as they were and written back with the grade.
type Pair struct {
	Response, Answer string
	Options          Options
	Result           Result // set by GradePairs
	fields           map[string]json.RawMessage
}

// ReadPairs reads every line of r (called name in messages). A line that is not a pair is
// reported in bad ("name:line: what is wrong") and left out. An input with no pair is an error
// naming the first bad line, so a wrong file fails before anything is graded; so is an empty one.
func ReadPairs(r io.Reader, name string, mode Mode) (pairs []*Pair, bad []string, err error) {
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		raw, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, nil, fmt.Errorf("read %s line %d: %w", name, n, err)
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			p, perr := ParsePair(raw, mode)
			if perr != nil {
				bad = append(bad, fmt.Sprintf("%s:%d: %v", name, n, perr))
			} else {
				pairs = append(pairs, p)
			}
		}
		if err != io.EOF {
			continue
		}
		switch {
		case len(pairs) == 0 && len(bad) > 0:
			more := ""
			if len(bad) > 1 {
				more = fmt.Sprintf(" (and %d more bad lines)", len(bad)-1)
			}
			return nil, nil, usererr.New("%s%s; no line to grade", bad[0], more)
		case len(pairs) == 0:
			return nil, nil, usererr.New("%s: empty (no lines to grade)", name)
		}
		return pairs, bad, nil
	}
}

// ParsePair reads one line; the error says what is wrong with it.
func ParsePair(raw []byte, mode Mode) (*Pair, error) {
	p := &Pair{Options: Options{Mode: mode}}
	if err := json.Unmarshal(raw, &p.fields); err != nil {
		msg, _ := jsonerr.Describe(err)
		return nil, errors.New(msg)
	}
	if p.fields == nil {
		return nil, fmt.Errorf("invalid JSON: want an object, got null")
	}
	for _, f := range []struct {
		name    string
		into    *string
		numeric bool // a number is taken as its text (datasets store some answers as 27.0)
	}{{"response", &p.Response, false}, {"answer", &p.Answer, true}} {
		v, ok := p.fields[f.name]
		if !ok {
			return nil, fmt.Errorf("missing field %q", f.name)
		}
		if json.Unmarshal(v, f.into) == nil {
			continue
		}
		if text, ok := NumberAnswer(string(v)); ok && f.numeric {
			*f.into = text
			continue
		}
		if f.numeric {
			return nil, fmt.Errorf("field %q: want a string or a number, got %s", f.name, abbreviate(v))
		}
		return nil, fmt.Errorf("field %q: want a string, got %s", f.name, abbreviate(v))
	}
	if v, ok := p.fields["truncated"]; ok {
		if err := json.Unmarshal(v, &p.Options.Truncated); err != nil {
			return nil, fmt.Errorf("field \"truncated\": want true or false, got %s", abbreviate(v))
		}
	}
	return p, nil
}

func abbreviate(v []byte) string {
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}

// GradePairs grades pairs on threads goroutines (0: one a core), calling done(1) after each, and
// returns how many are correct. Grade is safe for concurrent use.
func GradePairs(pairs []*Pair, threads int, done func(int)) (correct int) {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	next := make(chan *Pair)
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				p.Result = Grade(p.Response, p.Answer, p.Options)
				if done != nil {
					done(1)
				}
			}
		}()
	}
	for _, p := range pairs {
		next <- p
	}
	close(next)
	wg.Wait()
	for _, p := range pairs {
		if p.Result.Correct {
			correct++
		}
	}
	return correct
}

// WritePairs writes each pair as its line was, with "correct", "extracted" and "reason" set.
func WritePairs(w io.Writer, pairs []*Pair) error {
	bw := bufio.NewWriter(w)
	enc := plainjson.NewEncoder(bw)
	for _, p := range pairs {
		fields := make(map[string]json.RawMessage, len(p.fields)+3)
		for k, v := range p.fields {
			fields[k] = v
		}
		fields["correct"] = mustJSON(p.Result.Correct)
		fields["extracted"] = mustJSON(p.Result.Extracted)
		fields["reason"] = mustJSON(p.Result.Reason)
		if err := enc.Encode(fields); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // bools and strings always marshal
	}
	return b
}
