package eval

import (
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// ReadResults reads a results Parquet file written by Run back into records.
func ReadResults(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tbl, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(memory.DefaultAllocator),
		pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer tbl.Release()
	fields := ResultSchema.Fields()
	if n := len(tbl.Schema().Fields()); n == len(fields)-1 {
		fields = fields[:n] // written before response_ids was kept
	}
	for i, want := range fields {
		if i >= len(tbl.Schema().Fields()) || tbl.Schema().Field(i).Name != want.Name {
			return nil, fmt.Errorf("read %s: not an eval results file (no column %q at %d)", path, want.Name, i)
		}
	}
	tr := array.NewTableReader(tbl, 1<<16)
	defer tr.Release()
	var out []Record
	for tr.Next() {
		rec := tr.Record()
		for i := range int(rec.NumRows()) {
			out = append(out, readRecord(rec, i))
		}
	}
	return out, tr.Err()
}

func readRecord(rec arrow.Record, i int) Record {
	f := 0
	next := func() arrow.Array { f++; return rec.Column(f - 1) }
	str := func() string { return next().(*array.String).Value(i) }
	num := func() int { return int(next().(*array.Int64).Value(i)) }
	boolean := func() bool { return next().(*array.Boolean).Value(i) }
	var r Record
	r.ProblemID = str()
	r.ProblemIndex = num()
	r.Source = str()
	r.Sample = num()
	r.Seed = next().(*array.Uint64).Value(i)
	r.Reference = str()
	r.Response = str()
	r.Extracted = str()
	r.ExtractedRStar2 = str()
	r.CorrectStrict = boolean()
	r.CorrectRStar2 = boolean()
	r.Tokens = num()
	r.Generated = num()
	r.Turns = num()
	r.Calls = num()
	r.FailedCalls = num()
	r.Truncated = boolean()
	r.Finish = str()
	if f < int(rec.NumCols()) {
		l := next().(*array.List)
		start, end := l.ValueOffsets(i)
		vals := l.ListValues().(*array.Int32).Int32Values()
		r.ResponseIDs = append([]int32{}, vals[start:end]...)
	}
	return r
}
