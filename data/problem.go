package data

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"gorstar/internal/plainjson"
	"gorstar/internal/usererr"
)

// Problem is one row of the problems table: a task with a reference answer. Meta is a JSON object
// as text ("{}" when there is nothing to say).
type Problem struct {
	ID      string `json:"id"`
	Problem string `json:"problem"`
	Answer  string `json:"answer"`
	Source  string `json:"source"`
	Meta    string `json:"meta"`
}

// ProblemColumns are the columns of the problems table, in order.
var ProblemColumns = []string{"id", "problem", "answer", "source", "meta"}

func problemSchema() *arrow.Schema {
	fields := make([]arrow.Field, len(ProblemColumns))
	for i, name := range ProblemColumns {
		fields[i] = arrow.Field{Name: name, Type: arrow.BinaryTypes.String}
	}
	return arrow.NewSchema(fields, nil)
}

// problemJSON is the JSONL form: meta is inlined as a JSON object rather than a quoted string.
type problemJSON struct {
	ID      string          `json:"id"`
	Problem string          `json:"problem"`
	Answer  string          `json:"answer"`
	Source  string          `json:"source"`
	Meta    json.RawMessage `json:"meta"`
}

// MarshalJSON writes meta as the JSON object it holds.
func (p Problem) MarshalJSON() ([]byte, error) {
	meta := json.RawMessage(p.Meta)
	if p.Meta == "" || !json.Valid(meta) {
		meta, _ = json.Marshal(p.Meta)
		if p.Meta == "" {
			meta = json.RawMessage("{}")
		}
	}
	return plainjson.Marshal(problemJSON{p.ID, p.Problem, p.Answer, p.Source, meta})
}

// UnmarshalJSON accepts meta as an object or as a string holding one.
func (p *Problem) UnmarshalJSON(b []byte) error {
	var j problemJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = Problem{ID: j.ID, Problem: j.Problem, Answer: j.Answer, Source: j.Source, Meta: metaText(j.Meta)}
	return nil
}

// metaText turns a JSON meta value into the stored text: objects compacted, a string holding JSON
// unwrapped, null or absent as "{}".
func metaText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return "{}"
		}
		if json.Valid([]byte(s)) {
			return s
		}
	}
	return string(raw)
}

// ProblemWriter writes a problems table to a .parquet or .jsonl file that appears only when Close
// succeeds. Abort (safe after Close) drops it.
type ProblemWriter struct {
	tableSink
	cols [5]*array.StringBuilder
}

// CreateProblems starts a problems table at path; the extension (.parquet, .jsonl, .jsonl.gz)
// chooses the format.
func CreateProblems(path string) (*ProblemWriter, error) {
	switch formatOf(path) {
	case formatParquet:
		pq, err := createParquet(path, problemSchema())
		if err != nil {
			return nil, err
		}
		w := &ProblemWriter{tableSink: tableSink{pq: pq}}
		for i := range w.cols {
			w.cols[i] = pq.builder.Field(i).(*array.StringBuilder)
		}
		return w, nil
	case formatJSONL:
		jl, err := createJSONL(path)
		if err != nil {
			return nil, err
		}
		return &ProblemWriter{tableSink: tableSink{jl: jl}}, nil
	}
	return nil, unknownFormat(path)
}

// Write appends one problem. An empty Meta is stored as "{}".
func (w *ProblemWriter) Write(p Problem) error {
	if p.Meta == "" {
		p.Meta = "{}"
	}
	w.count++
	if w.jl != nil {
		line, err := p.MarshalJSON()
		if err != nil {
			return fmt.Errorf("write %s row %d: %w", w.jl.path, w.count, err)
		}
		return w.jl.writeLine(line)
	}
	for i, v := range [5]string{p.ID, p.Problem, p.Answer, p.Source, p.Meta} {
		w.cols[i].Append(v)
	}
	return w.pq.rowAdded(len(p.ID) + len(p.Problem) + len(p.Answer) + len(p.Source) + len(p.Meta))
}

// ProblemReader streams a problems table from Parquet or JSONL.
type ProblemReader struct {
	tableSource
}

// OpenProblems opens a problems table. Parquet files must have the columns id, problem, answer,
// source and meta (strings); JSONL lines are objects with those fields.
func OpenProblems(path string) (*ProblemReader, error) {
	return openProblems(context.Background(), path)
}

func openProblems(ctx context.Context, path string) (*ProblemReader, error) {
	src, err := openTableSource(ctx, path, func(pq *parquetFile) ([]int, error) {
		fields := make([]int, len(ProblemColumns))
		for i, name := range ProblemColumns {
			fields[i] = pq.fieldIndex(name)
			if fields[i] < 0 {
				return nil, pq.missingColumn("problems", name)
			}
			if !isStringType(pq.schema.Field(fields[i]).Type) {
				return nil, usererr.New("%s: column %q is %s, expected string", path, name, pq.schema.Field(fields[i]).Type)
			}
		}
		return fields, nil
	})
	if err != nil {
		return nil, err
	}
	return &ProblemReader{src}, nil
}

func isStringType(t arrow.DataType) bool {
	return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING
}

// Next returns the next problem, or io.EOF after the last one.
func (r *ProblemReader) Next() (Problem, error) {
	if r.lines != nil {
		line, err := r.lines.next()
		if err != nil {
			return Problem{}, err
		}
		obj, err := decodeObject(line)
		if err != nil {
			return Problem{}, usererr.New("%s: %v", r.lines.where(), err)
		}
		var p Problem
		for _, f := range []struct {
			name string
			dst  *string
		}{{"id", &p.ID}, {"problem", &p.Problem}, {"answer", &p.Answer}, {"source", &p.Source}} {
			*f.dst, _ = jsonText(obj[f.name])
		}
		p.Meta = metaText(obj["meta"])
		if p.Problem == "" {
			return Problem{}, usererr.New("%s: missing field \"problem\" (fields found: %s); other layouts go through `gorstar data import`", r.lines.where(), fieldNames(obj))
		}
		return p, nil
	}
	rec, i, err := r.cursor.next()
	if err != nil {
		return Problem{}, err
	}
	var p Problem
	for c, dst := range []*string{&p.ID, &p.Problem, &p.Answer, &p.Source, &p.Meta} {
		col := column(rec, ProblemColumns[c])
		if col.IsNull(i) {
			return Problem{}, usererr.New("%s row %d: column %q is null", r.path, r.cursor.row, ProblemColumns[c])
		}
		*dst = stringColumn(col).Value(i)
	}
	return p, nil
}

// ReadAllProblems reads a whole problems table; for small files such as evaluation sets.
func ReadAllProblems(path string) ([]Problem, error) {
	r, err := OpenProblems(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Problem
	for {
		p, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
}
