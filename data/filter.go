package data

import (
	"context"
	"fmt"
	"io"

	"gorstar/internal/progress"
	"gorstar/internal/usererr"
	"gorstar/reward"
)

// Reasons a filter drops a row, as reported in FilterResult.Dropped.
const (
	DropNotInteger   = "non_integer_answer"
	DropContaminated = "contaminated"
	DropDuplicate    = "duplicate"
)

// FilterOptions configure Filter. Each rule is off unless set.
type FilterOptions struct {
	In, Out string
	// IntegerAnswers keeps only problems whose answer reward.Kind calls "integer" (rStar2 trains
	// on integer answers only, which makes grading reliable).
	IntegerAnswers bool
	// Dedup drops a problem whose normalized text (case, spacing, punctuation) was seen before.
	Dedup bool
	// Decontaminate lists evaluation files (any format data import reads); a problem sharing any
	// normalized NGram-word sequence with one of their problems is dropped.
	Decontaminate []string
	NGram         int
	// Check, when set, judges the rows the rules kept, CheckBatch at a time (0: 512), and returns
	// per row the reason to drop it ("" keeps it). It is how a caller filters by what this package
	// cannot compute (prompt length under a tokenizer, a policy's pass rate) while data stays free
	// of models. Rows keep their input order.
	Check      func(ctx context.Context, rows []Problem) (drop []string, err error)
	CheckBatch int
	Progress   *progress.Bar
}

// FilterResult reports what Filter kept and why it dropped the rest (first matching reason,
// in the order integer answer, contamination, duplicate, then the Check's reasons).
type FilterResult struct {
	Read    int            `json:"read"`
	Rows    int            `json:"rows"`
	Dropped map[string]int `json:"dropped"`
	Out     string         `json:"out"`
	// EvalProblems is the number of evaluation problems checked against.
	EvalProblems int `json:"eval_problems,omitempty"`
}

// Filter streams a problems table from In to Out, dropping rows by the enabled rules.
func Filter(ctx context.Context, o FilterOptions) (FilterResult, error) {
	res := FilterResult{Out: o.Out, Dropped: map[string]int{}}
	if o.In == o.Out {
		return res, usererr.New("data filter: --out must differ from --in")
	}
	if len(o.Decontaminate) > 0 && o.NGram < 1 {
		return res, usererr.New("data filter: --ngram must be ≥ 1, got %d", o.NGram)
	}
	var evalGrams map[uint64]struct{}
	if len(o.Decontaminate) > 0 {
		var err error
		evalGrams, res.EvalProblems, err = loadEvalNgrams(ctx, o.Decontaminate, o.NGram)
		if err != nil {
			return res, err
		}
	}
	r, err := openProblems(ctx, o.In)
	if err != nil {
		return res, err
	}
	defer r.Close()
	w, err := CreateProblems(o.Out)
	if err != nil {
		return res, err
	}
	defer w.Abort()
	pend := &checked{o: o, w: w, res: &res}
	seen := map[uint64]struct{}{}
	for {
		p, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, err
		}
		if res.Read%1024 == 0 && ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Read++
		o.Progress.Add(1)
		if reason := dropReason(p, o, evalGrams, seen); reason != "" {
			res.Dropped[reason]++
			continue
		}
		if err := pend.add(ctx, p); err != nil {
			return res, err
		}
	}
	if err := pend.flush(ctx); err != nil {
		return res, err
	}
	if err := w.Close(); err != nil {
		return res, err
	}
	o.Progress.Finish()
	return res, nil
}

// checked holds the rows the rules kept until a batch is full for the Check (passes them
// straight to the writer without one).
type checked struct {
	o     FilterOptions
	w     *ProblemWriter
	res   *FilterResult
	batch []Problem
}

func (c *checked) add(ctx context.Context, p Problem) error {
	if c.o.Check == nil {
		return c.write(p)
	}
	c.batch = append(c.batch, p)
	size := c.o.CheckBatch
	if size <= 0 {
		size = 512
	}
	if len(c.batch) < size {
		return nil
	}
	return c.flush(ctx)
}

// flush runs the Check over the pending rows and writes those it keeps.
func (c *checked) flush(ctx context.Context) error {
	if len(c.batch) == 0 {
		return nil
	}
	drop, err := c.o.Check(ctx, c.batch)
	if err != nil {
		return err
	}
	if len(drop) != len(c.batch) {
		return fmt.Errorf("data filter: the check judged %d of %d rows", len(drop), len(c.batch))
	}
	for i, p := range c.batch {
		if drop[i] != "" {
			c.res.Dropped[drop[i]]++
			continue
		}
		if err := c.write(p); err != nil {
			return err
		}
	}
	c.batch = c.batch[:0]
	return nil
}

func (c *checked) write(p Problem) error {
	if err := c.w.Write(p); err != nil {
		return err
	}
	c.res.Rows++
	return nil
}

func dropReason(p Problem, o FilterOptions, evalGrams map[uint64]struct{}, seen map[uint64]struct{}) string {
	if o.IntegerAnswers && reward.Kind(p.Answer) != "integer" {
		return DropNotInteger
	}
	if evalGrams != nil {
		for _, h := range ngramHashes(p.Problem, o.NGram) {
			if _, hit := evalGrams[h]; hit {
				return DropContaminated
			}
		}
	}
	if o.Dedup {
		key := textKey(p.Problem)
		if _, dup := seen[key]; dup {
			return DropDuplicate
		}
		seen[key] = struct{}{}
	}
	return ""
}

// loadEvalNgrams reads the problems of the evaluation files (answers not needed) and returns the
// set of their n-gram hashes and the number of problems.
func loadEvalNgrams(ctx context.Context, paths []string, n int) (map[uint64]struct{}, int, error) {
	grams := map[uint64]struct{}{}
	count := 0
	for _, path := range paths {
		src, err := openSource(ctx, path, "auto", Mapping{answerOptional: true})
		if err != nil {
			return nil, 0, err
		}
		for {
			row, err := src.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				src.close()
				return nil, 0, err
			}
			if row.Problem.Problem == "" {
				continue
			}
			count++
			for _, h := range ngramHashes(row.Problem.Problem, n) {
				grams[h] = struct{}{}
			}
		}
		src.close()
	}
	return grams, count, nil
}
