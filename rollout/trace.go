package rollout

import (
	"bufio"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"gorstar/data"
	"gorstar/internal/atomicfile"
	"gorstar/internal/plainjson"
)

// turnType is the Parquet struct of a TurnRecord.
var turnType = arrow.StructOf(
	arrow.Field{Name: "tokens", Type: arrow.PrimitiveTypes.Int32},
	arrow.Field{Name: "code", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "input", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "status", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "duration_ms", Type: arrow.PrimitiveTypes.Float64},
	arrow.Field{Name: "parse_error", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "tool_text", Type: arrow.BinaryTypes.String},
)

// TraceSchema is the Parquet layout of trajectories: one row each, columns named as the JSON fields.
var TraceSchema = arrow.NewSchema([]arrow.Field{
	{Name: "problem_id", Type: arrow.BinaryTypes.String},
	{Name: "problem_index", Type: arrow.PrimitiveTypes.Int64},
	{Name: "sample", Type: arrow.PrimitiveTypes.Int64},
	{Name: "seed", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "weight_version", Type: arrow.PrimitiveTypes.Int64},
	{Name: "prompt_ids", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)},
	{Name: "response_ids", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)},
	{Name: "loss_mask", Type: arrow.ListOfNonNullable(arrow.FixedWidthTypes.Boolean)},
	{Name: "logprobs", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float32)},
	{Name: "turns", Type: arrow.ListOfNonNullable(turnType)},
	{Name: "text", Type: arrow.BinaryTypes.String},
	{Name: "finish", Type: arrow.BinaryTypes.String},
	{Name: "error", Type: arrow.BinaryTypes.String},
	{Name: "num_turns", Type: arrow.PrimitiveTypes.Int64},
	{Name: "tool_calls", Type: arrow.PrimitiveTypes.Int64},
	{Name: "failed_tool_calls", Type: arrow.PrimitiveTypes.Int64},
	{Name: "internal_tool_errors", Type: arrow.PrimitiveTypes.Int64},
	{Name: "answer_tags", Type: arrow.PrimitiveTypes.Int64},
	{Name: "generated_tokens", Type: arrow.PrimitiveTypes.Int64},
	{Name: "reward", Type: arrow.PrimitiveTypes.Float64},
	{Name: "correct", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "extracted", Type: arrow.BinaryTypes.String},
	{Name: "duration_ms", Type: arrow.PrimitiveTypes.Float64},
	{Name: "tool_wait_ms", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// WriteParquet writes trajectories to a zstd-compressed Parquet file (TraceSchema) that appears at
// path only once it is complete.
func WriteParquet(path string, ts []Trajectory) error {
	return data.WriteParquet(path, TraceSchema, len(ts), func(b *array.RecordBuilder, i int) int {
		appendTrace(b, &ts[i])
		t := &ts[i]
		return 9*(len(t.PromptIDs)+len(t.ResponseIDs)) + len(t.Text) + 256 // ids, mask, logprobs; text; the rest
	})
}

// appendTrace adds one row; the field order is TraceSchema's.
func appendTrace(b *array.RecordBuilder, t *Trajectory) {
	f := 0
	next := func() array.Builder { f++; return b.Field(f - 1) }
	str := func(s string) { next().(*array.StringBuilder).Append(s) }
	i64 := func(v int64) { next().(*array.Int64Builder).Append(v) }
	f64 := func(v float64) { next().(*array.Float64Builder).Append(v) }
	ids := func(v []int32) {
		l := next().(*array.ListBuilder)
		l.Append(true)
		l.ValueBuilder().(*array.Int32Builder).AppendValues(v, nil)
	}
	str(t.ProblemID)
	i64(int64(t.ProblemIndex))
	i64(int64(t.Sample))
	next().(*array.Uint64Builder).Append(t.Seed)
	i64(t.WeightVersion)
	ids(t.PromptIDs)
	ids(t.ResponseIDs)
	mask := next().(*array.ListBuilder)
	mask.Append(true)
	mask.ValueBuilder().(*array.BooleanBuilder).AppendValues(t.LossMask, nil)
	lp := next().(*array.ListBuilder)
	lp.Append(true)
	lp.ValueBuilder().(*array.Float32Builder).AppendValues(t.LogProbs, nil)
	appendTurns(next().(*array.ListBuilder), t.Turns)
	str(t.Text)
	str(string(t.Finish))
	str(t.Error)
	for _, n := range []int{t.NumTurns, t.ToolCalls, t.FailedToolCalls, t.InternalToolErrors, t.AnswerTags, t.GeneratedTokens} {
		i64(int64(n))
	}
	f64(t.Reward)
	next().(*array.BooleanBuilder).Append(t.Correct)
	str(t.Extracted)
	f64(t.DurationMS)
	f64(t.ToolWaitMS)
}

func appendTurns(l *array.ListBuilder, turns []TurnRecord) {
	l.Append(true)
	s := l.ValueBuilder().(*array.StructBuilder)
	for _, r := range turns {
		s.Append(true)
		s.FieldBuilder(0).(*array.Int32Builder).Append(int32(r.Tokens))
		for k, v := range []string{r.Code, r.Input, r.Status} {
			s.FieldBuilder(1 + k).(*array.StringBuilder).Append(v)
		}
		s.FieldBuilder(4).(*array.Float64Builder).Append(r.DurationMS)
		s.FieldBuilder(5).(*array.StringBuilder).Append(r.ParseError)
		s.FieldBuilder(6).(*array.StringBuilder).Append(r.ToolText)
	}
}

// WriteJSONL writes trajectories one JSON object per line, for people (and jq), atomically.
func WriteJSONL(path string, ts []Trajectory) error {
	out, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer out.Abort()
	w := bufio.NewWriterSize(out, 1<<20)
	enc := plainjson.NewEncoder(w)
	for i := range ts {
		if err := enc.Encode(&ts[i]); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return out.Commit()
}
