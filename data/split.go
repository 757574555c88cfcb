package data

import (
	"context"
	"io"
	"math"
	"math/rand/v2"

	"gorstar/internal/usererr"
)

// SplitOptions configure Split.
type SplitOptions struct {
	In, Train, Test string
	// TestSize is a number of rows (≥ 1) or, below 1, a fraction of the rows.
	TestSize float64
	Seed     int64
}

// SplitResult counts the rows written to each side.
type SplitResult struct {
	Train int `json:"train"`
	Test  int `json:"test"`
}

// Split writes a seeded random sample of TestSize rows of a problems or conversations table to
// Test and the rest to Train, both in input order. Either both files appear or neither does.
func Split(ctx context.Context, o SplitOptions) (SplitResult, error) {
	kind, cols, err := tableKind(o.In)
	if err != nil {
		return SplitResult{}, err
	}
	switch kind {
	case "problems":
		return splitRows(ctx, problemsTable, o)
	case "conversations":
		return splitRows(ctx, conversationsTable, o)
	}
	return SplitResult{}, notATable(o.In, cols)
}

func splitRows[T any](ctx context.Context, t table[T], o SplitOptions) (SplitResult, error) {
	var res SplitResult
	if o.Train == "" || o.Test == "" {
		return res, usererr.New("data split: give both --train and --test")
	}
	if o.Train == o.Test || o.Train == o.In || o.Test == o.In {
		return res, usererr.New("data split: --in, --train and --test must be three different files")
	}
	total, err := countRows(ctx, t, o.In)
	if err != nil {
		return res, err
	}
	nTest, err := testCount(o.TestSize, total)
	if err != nil {
		return res, err
	}
	test := sampleRows(total, nTest, o.Seed)

	r, err := t.open(ctx, o.In)
	if err != nil {
		return res, err
	}
	defer r.Close()
	trainW, err := t.create(o.Train)
	if err != nil {
		return res, err
	}
	defer trainW.Abort()
	testW, err := t.create(o.Test)
	if err != nil {
		return res, err
	}
	defer testW.Abort()
	for i := int64(0); ; i++ {
		row, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, err
		}
		if i%1024 == 0 && ctx.Err() != nil {
			return res, ctx.Err()
		}
		if test[i/64]&(1<<(i%64)) != 0 {
			err, res.Test = testW.Write(row), res.Test+1
		} else {
			err, res.Train = trainW.Write(row), res.Train+1
		}
		if err != nil {
			return res, err
		}
	}
	if err := testW.Close(); err != nil {
		return res, err
	}
	return res, trainW.Close()
}

// countRows returns the number of rows, from the Parquet footer or by reading a JSONL file once.
func countRows[T any](ctx context.Context, t table[T], path string) (int64, error) {
	r, err := t.open(ctx, path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	if n := r.Rows(); n >= 0 {
		return n, nil
	}
	var n int64
	for {
		if _, err := r.Next(); err == io.EOF {
			return n, nil
		} else if err != nil {
			return n, err
		}
		n++
	}
}

func testCount(size float64, total int64) (int64, error) {
	var n int64
	switch {
	case size >= 1 && size == math.Trunc(size):
		n = int64(size)
	case size > 0 && size < 1:
		n = int64(math.Round(size * float64(total)))
	default:
		return 0, usererr.New("data split: --test-size must be a whole number of rows ≥ 1 or a fraction in (0, 1), got %v", size)
	}
	if n > total {
		return 0, usererr.New("data split: --test-size %d is more than the %d rows of the input", n, total)
	}
	return n, nil
}

// sampleRows picks k of n row indices uniformly with Floyd's algorithm; the result is a bitset.
func sampleRows(n, k int64, seed int64) []uint64 {
	bits := make([]uint64, (n+63)/64+1)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed5eed))
	for j := n - k; j < n; j++ {
		t := rng.Int64N(j + 1)
		if bits[t/64]&(1<<(t%64)) != 0 {
			t = j
		}
		bits[t/64] |= 1 << (t % 64)
	}
	return bits
}
