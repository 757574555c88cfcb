package eval

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"gorstar/data"
)

// Record is one graded sample as the results file and the checkpoint keep it.
type Record struct {
	ProblemID    string `json:"problem_id"`
	ProblemIndex int    `json:"problem_index"`
	Source       string `json:"source"`
	Sample       int    `json:"sample"`
	Seed         uint64 `json:"seed"`
	Reference    string `json:"reference"`
	Response     string `json:"response"`
	// Extracted is the final answer strict grading found; ExtractedRStar2 the rstar2 mode's.
	Extracted       string `json:"extracted"`
	ExtractedRStar2 string `json:"extracted_rstar2"`
	CorrectStrict   bool   `json:"correct_strict"`
	CorrectRStar2   bool   `json:"correct_rstar2"`
	// Tokens counts the response (generated and tool tokens: the budget's measure); Generated only
	// the model's own.
	Tokens      int    `json:"tokens"`
	Generated   int    `json:"generated_tokens"`
	Turns       int    `json:"turns"`
	Calls       int    `json:"calls"`
	FailedCalls int    `json:"failed_calls"`
	Truncated   bool   `json:"truncated"`
	Finish      string `json:"finish"`
	// ResponseIDs are the response's token ids (token mode; empty in text mode), so two runs can
	// be compared token for token.
	ResponseIDs []int32 `json:"response_ids"`
}

// ResultSchema is the Parquet layout of the per-sample results: columns named as Record's JSON
// fields, in its order.
var ResultSchema = arrow.NewSchema([]arrow.Field{
	{Name: "problem_id", Type: arrow.BinaryTypes.String},
	{Name: "problem_index", Type: arrow.PrimitiveTypes.Int64},
	{Name: "source", Type: arrow.BinaryTypes.String},
	{Name: "sample", Type: arrow.PrimitiveTypes.Int64},
	{Name: "seed", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "reference", Type: arrow.BinaryTypes.String},
	{Name: "response", Type: arrow.BinaryTypes.String},
	{Name: "extracted", Type: arrow.BinaryTypes.String},
	{Name: "extracted_rstar2", Type: arrow.BinaryTypes.String},
	{Name: "correct_strict", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "correct_rstar2", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "tokens", Type: arrow.PrimitiveTypes.Int64},
	{Name: "generated_tokens", Type: arrow.PrimitiveTypes.Int64},
	{Name: "turns", Type: arrow.PrimitiveTypes.Int64},
	{Name: "calls", Type: arrow.PrimitiveTypes.Int64},
	{Name: "failed_calls", Type: arrow.PrimitiveTypes.Int64},
	{Name: "truncated", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "finish", Type: arrow.BinaryTypes.String},
	{Name: "response_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
}, nil)

// writeResults writes the records to a zstd Parquet file that appears only once complete; the
// manifest's JSON rides along in the file's metadata (key "gorstar.eval.manifest").
func writeResults(path string, recs []Record, manifest []byte) error {
	meta := arrow.NewMetadata([]string{"gorstar.eval.manifest"}, []string{string(manifest)})
	schema := arrow.NewSchema(ResultSchema.Fields(), &meta)
	return data.WriteParquet(path, schema, len(recs), func(b *array.RecordBuilder, i int) int {
		appendRecord(b, &recs[i])
		return len(recs[i].Response) + len(recs[i].Reference) + 4*len(recs[i].ResponseIDs) + 128
	})
}

func appendRecord(b *array.RecordBuilder, r *Record) {
	f := 0
	next := func() array.Builder { f++; return b.Field(f - 1) }
	str := func(s string) { next().(*array.StringBuilder).Append(s) }
	i64 := func(v int) { next().(*array.Int64Builder).Append(int64(v)) }
	boolean := func(v bool) { next().(*array.BooleanBuilder).Append(v) }
	str(r.ProblemID)
	i64(r.ProblemIndex)
	str(r.Source)
	i64(r.Sample)
	next().(*array.Uint64Builder).Append(r.Seed)
	str(r.Reference)
	str(r.Response)
	str(r.Extracted)
	str(r.ExtractedRStar2)
	boolean(r.CorrectStrict)
	boolean(r.CorrectRStar2)
	i64(r.Tokens)
	i64(r.Generated)
	i64(r.Turns)
	i64(r.Calls)
	i64(r.FailedCalls)
	boolean(r.Truncated)
	str(r.Finish)
	ids := next().(*array.ListBuilder)
	ids.Append(true)
	ids.ValueBuilder().(*array.Int32Builder).AppendValues(r.ResponseIDs, nil)
}
