package data

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow/go/v17/arrow/array"

	"gorstar/chat"
	"gorstar/internal/progress"
	"gorstar/internal/usererr"
)

// tableReader and tableWriter are what the problems and conversations readers and writers share,
// so that copying, splitting and exporting work on either table.
type tableReader[T any] interface {
	Next() (T, error)
	Rows() int64
	Close() error
}

type tableWriter[T any] interface {
	Write(T) error
	Close() error
	Abort()
}

// table binds the open/create functions of one table.
type table[T any] struct {
	open   func(ctx context.Context, path string) (tableReader[T], error)
	create func(path string) (tableWriter[T], error)
}

var problemsTable = table[Problem]{
	open: func(ctx context.Context, p string) (tableReader[Problem], error) {
		r, err := openProblems(ctx, p)
		if err != nil {
			return nil, err
		}
		return r, nil
	},
	create: func(p string) (tableWriter[Problem], error) {
		w, err := CreateProblems(p)
		if err != nil {
			return nil, err
		}
		return w, nil
	},
}

var conversationsTable = table[chat.Conversation]{
	open: func(ctx context.Context, p string) (tableReader[chat.Conversation], error) {
		r, err := openConversations(ctx, p)
		if err != nil {
			return nil, err
		}
		return r, nil
	},
	create: func(p string) (tableWriter[chat.Conversation], error) {
		w, err := CreateConversations(p)
		if err != nil {
			return nil, err
		}
		return w, nil
	},
}

// copyRows streams every row of in to out and returns the number of rows written. out appears
// only if everything succeeded.
func copyRows[T any](ctx context.Context, t table[T], in, out string, bar *progress.Bar) (int, error) {
	r, err := t.open(ctx, in)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	w, err := t.create(out)
	if err != nil {
		return 0, err
	}
	defer w.Abort()
	n := 0
	for {
		row, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
		if n%1024 == 0 && ctx.Err() != nil {
			return n, ctx.Err()
		}
		if err := w.Write(row); err != nil {
			return n, err
		}
		n++
		bar.Add(1)
	}
	bar.Finish()
	return n, w.Close()
}

// notATable is the user error for a file that holds neither table.
func notATable(path string, cols []string) error {
	return usererr.New("%s: not a problems or conversations table (columns found: %s); convert it with `gorstar data import`",
		path, strings.Join(cols, ", "))
}

// Export copies a problems or conversations table to out, whose extension picks the format
// (.jsonl, .jsonl.gz or .parquet). It returns the number of rows.
func Export(ctx context.Context, in, out string, bar *progress.Bar) (int, error) {
	kind, cols, err := tableKind(in)
	if err != nil {
		return 0, err
	}
	switch kind {
	case "problems":
		return copyRows(ctx, problemsTable, in, out, bar)
	case "conversations":
		return copyRows(ctx, conversationsTable, in, out, bar)
	case kindEvalResults, kindTraces:
		if formatOf(out) == formatJSONL {
			return exportRows(ctx, in, out, bar)
		}
		return 0, usererr.New("%s: %s export to .jsonl or .jsonl.gz only, got %s", in, kind, out)
	}
	return 0, notATable(in, cols)
}

// Tables gorstar writes that export as they are (tableKind).
const (
	kindEvalResults = "eval results"
	kindTraces      = "rollout traces"
)

// exportRows writes every row of a Parquet table (eval results, rollout traces) to a JSONL file
// as one object per line, keyed by column name.
func exportRows(ctx context.Context, in, out string, bar *progress.Bar) (int, error) {
	f, err := openParquet(in)
	if err != nil {
		return 0, err
	}
	defer f.close()
	rr, err := f.records(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	w, err := createJSONL(out)
	if err != nil {
		return 0, err
	}
	defer w.abort()
	n := 0
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		rec := rr.Record()
		if err := array.RecordToJSON(rec, w.buf); err != nil {
			return n, fmt.Errorf("write %s: %w", out, err)
		}
		n += int(rec.NumRows())
		bar.Add(int(rec.NumRows()))
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return n, fmt.Errorf("read %s: %w", in, err)
	}
	bar.Finish()
	return n, w.close()
}

// RowCount is the number of rows of a Parquet table read from its footer, or -1 when that is not
// known without reading the file (JSONL) or the file cannot be opened (the command that reads it
// will report why).
func RowCount(path string) int64 {
	if f, err := sniffFormat(path); err != nil || f != formatParquet {
		return -1
	}
	f, err := openParquet(path)
	if err != nil {
		return -1
	}
	defer f.close()
	return f.numRows()
}

// tableSink is the file under a table writer: Parquet or JSONL, written atomically.
type tableSink struct {
	pq    *parquetWriter
	jl    *jsonlWriter
	count int
}

// Rows is the number of rows written so far.
func (w *tableSink) Rows() int { return w.count }

// Close finishes the file and makes it visible at its path.
func (w *tableSink) Close() error {
	if w.jl != nil {
		return w.jl.close()
	}
	return w.pq.close()
}

// Abort drops the file unless it was closed.
func (w *tableSink) Abort() {
	if w.jl != nil {
		w.jl.abort()
		return
	}
	w.pq.abort()
}

// tableSource is the file under a table reader: JSONL lines, or Parquet row groups behind a cursor.
type tableSource struct {
	path   string
	pq     *parquetFile
	cursor *rowCursor
	lines  *lineReader
	rows   int64 // -1 when unknown (JSONL)
}

// openTableSource opens path as JSONL (ready to read) or as Parquet, whose columns the caller then
// checks with pick and reads from the field indices pick returns. pick closes nothing itself.
func openTableSource(ctx context.Context, path string, pick func(pq *parquetFile) ([]int, error)) (tableSource, error) {
	f, err := sniffFormat(path)
	if err != nil {
		return tableSource{}, err
	}
	if f == formatJSONL {
		lines, err := openLines(path)
		if err != nil {
			return tableSource{}, err
		}
		return tableSource{path: path, lines: lines, rows: -1}, nil
	}
	pq, err := openParquet(path)
	if err != nil {
		return tableSource{}, err
	}
	fields, err := pick(pq)
	if err == nil {
		var cursor *rowCursor
		if cursor, err = pq.cursor(ctx, fields); err == nil {
			return tableSource{path: path, pq: pq, cursor: cursor, rows: pq.numRows()}, nil
		}
	}
	pq.close()
	return tableSource{}, err
}

// Rows is the number of rows in the file, or -1 for JSONL (unknown until read).
func (r *tableSource) Rows() int64 { return r.rows }

// Close releases the file.
func (r *tableSource) Close() error {
	if r.lines != nil {
		return r.lines.close()
	}
	r.cursor.close()
	return r.pq.close()
}
