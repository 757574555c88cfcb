package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"gorstar/internal/atomicfile"
	"gorstar/internal/usererr"
)

// Row groups are cut at whichever limit comes first. Together with streamed page reads this keeps
// memory bounded by a few row groups whatever the size of the file.
const (
	rowGroupMaxRows  = 65536
	rowGroupMaxBytes = 16 << 20
	readBatchRows    = 2048
)

// parquetWriter buffers rows in Arrow builders and writes each full buffer as one row group of a
// zstd-compressed Parquet file that becomes visible only on close.
type parquetWriter struct {
	path     string
	out      *atomicfile.File
	fw       *pqarrow.FileWriter
	builder  *array.RecordBuilder
	rows     int
	bytes    int
	failed   bool
	maxRows  int // row-group limits; tests lower them to cross row groups cheaply
	maxBytes int
}

func createParquet(path string, schema *arrow.Schema) (*parquetWriter, error) {
	out, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(rowGroupMaxRows),
		parquet.WithDictionaryDefault(false),
		parquet.WithCreatedBy("gorstar"),
	)
	// The Parquet writer closes a sink that is an io.Closer; the atomic file must stay open for
	// Commit, so it is handed over as a plain writer.
	fw, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{out}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		out.Abort()
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &parquetWriter{
		path:     path,
		out:      out,
		fw:       fw,
		builder:  array.NewRecordBuilder(memory.DefaultAllocator, schema),
		maxRows:  rowGroupMaxRows,
		maxBytes: rowGroupMaxBytes,
	}, nil
}

// rowAdded records that one row was appended to the builders, carrying about size bytes, and
// flushes a row group when a limit is reached.
func (w *parquetWriter) rowAdded(size int) error {
	w.rows++
	w.bytes += size
	if w.rows >= w.maxRows || w.bytes >= w.maxBytes {
		return w.flush()
	}
	return nil
}

func (w *parquetWriter) flush() error {
	if w.rows == 0 {
		return nil
	}
	// The next row group's builders are sized like this one's (after this one is written), so
	// that string buffers are allocated once instead of doubled and copied up to their size.
	fields := w.builder.Fields()
	dataLens := make([]int, len(fields))
	for i, f := range fields {
		if sb, ok := f.(*array.StringBuilder); ok {
			dataLens[i] = sb.DataLen()
		}
	}
	rows := w.rows
	rec := w.builder.NewRecord()
	w.rows, w.bytes = 0, 0
	err := w.fw.Write(rec)
	rec.Release()
	if err != nil {
		w.failed = true
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	for i, f := range fields {
		if sb, ok := f.(*array.StringBuilder); ok {
			sb.Reserve(rows)
			sb.ReserveData(dataLens[i])
		}
	}
	return nil
}

// close writes the last row group and the footer and publishes the file.
func (w *parquetWriter) close() error {
	if w.failed {
		w.abort()
		return fmt.Errorf("write %s: an earlier write failed", w.path)
	}
	defer w.builder.Release()
	if err := w.flush(); err != nil {
		w.out.Abort()
		return err
	}
	if err := w.fw.Close(); err != nil {
		w.out.Abort()
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	return w.out.Commit()
}

// abort drops the file; nothing is left at the target path.
func (w *parquetWriter) abort() {
	w.out.Abort()
}

// parquetFile is an open Parquet file with an Arrow view of its schema.
type parquetFile struct {
	path   string
	raw    *file.Reader
	reader *pqarrow.FileReader
	schema *arrow.Schema
}

// openParquet opens path for streaming reads. Files that are missing, empty or not Parquet are
// user errors.
func openParquet(path string) (*parquetFile, error) {
	if err := checkInputFile(path); err != nil {
		return nil, err
	}
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.BufferedStreamEnabled = true
	props.BufferSize = 1 << 20
	raw, err := file.OpenParquetFile(path, false, file.WithReadProps(props))
	if err != nil {
		return nil, usererr.New("%s: not a readable Parquet file: %v", path, err)
	}
	reader, err := pqarrow.NewFileReader(raw, pqarrow.ArrowReadProperties{BatchSize: readBatchRows}, memory.DefaultAllocator)
	if err != nil {
		raw.Close()
		return nil, usererr.New("%s: unsupported Parquet schema: %v", path, err)
	}
	schema, err := reader.Schema()
	if err != nil {
		raw.Close()
		return nil, usererr.New("%s: unsupported Parquet schema: %v", path, err)
	}
	return &parquetFile{path: path, raw: raw, reader: reader, schema: schema}, nil
}

// checkInputFile turns a missing, unreadable, empty or directory input into one clear user error.
func checkInputFile(path string) error {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return usererr.New("%s: no such file", path)
	case err != nil:
		return usererr.New("%s: %v", path, err)
	case info.IsDir():
		return usererr.New("%s: is a directory, expected a file", path)
	case info.Size() == 0:
		return usererr.New("%s: file is empty", path)
	}
	return nil
}

func (f *parquetFile) close() error { return f.raw.Close() }

func (f *parquetFile) numRows() int64 { return f.raw.NumRows() }

// columnNames lists the top-level columns, in file order.
func (f *parquetFile) columnNames() []string {
	names := make([]string, len(f.schema.Fields()))
	for i, fld := range f.schema.Fields() {
		names[i] = fld.Name
	}
	return names
}

// fieldIndex returns the index of the top-level column name, or -1.
func (f *parquetFile) fieldIndex(name string) int {
	for i, fld := range f.schema.Fields() {
		if fld.Name == name {
			return i
		}
	}
	return -1
}

// missingColumn is the user error for a required column that the file lacks.
func (f *parquetFile) missingColumn(what, name string) error {
	return usererr.New("%s: no %s column %q (columns found: %s)", f.path, what, name, strings.Join(f.columnNames(), ", "))
}

// records streams the given top-level columns (by index) in batches; columns come back in the
// order of fields. A nil fields reads every column.
func (f *parquetFile) records(ctx context.Context, fields []int) (pqarrow.RecordReader, error) {
	var leaves []int
	if fields != nil {
		for _, fi := range fields {
			leaves = appendLeaves(leaves, &f.reader.Manifest.Fields[fi])
		}
		sort.Ints(leaves)
	}
	rr, err := f.reader.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return nil, usererr.New("%s: %v", f.path, err)
	}
	return rr, nil
}

// appendLeaves adds the leaf column indices under field. (Group fields of a manifest carry a zero
// ColIndex rather than -1, so leaves are told by having no children.)
func appendLeaves(dst []int, field *pqarrow.SchemaField) []int {
	if len(field.Children) == 0 {
		return append(dst, field.ColIndex)
	}
	for i := range field.Children {
		dst = appendLeaves(dst, &field.Children[i])
	}
	return dst
}

// rowCursor walks the rows of a record stream one at a time, keeping one batch in memory.
type rowCursor struct {
	path string
	rr   pqarrow.RecordReader
	rec  arrow.Record
	i    int
	row  int64 // rows returned so far
}

func (f *parquetFile) cursor(ctx context.Context, fields []int) (*rowCursor, error) {
	rr, err := f.records(ctx, fields)
	if err != nil {
		return nil, err
	}
	return &rowCursor{path: f.path, rr: rr}, nil
}

// next advances to the next row and returns its batch and index inside it; io.EOF at the end.
func (c *rowCursor) next() (arrow.Record, int, error) {
	for c.rec == nil || c.i >= int(c.rec.NumRows()) {
		if !c.rr.Next() {
			if err := c.rr.Err(); err != nil && !errors.Is(err, io.EOF) {
				return nil, 0, usererr.New("%s: reading row %d: %v", c.path, c.row+1, err)
			}
			c.rec = nil
			return nil, 0, io.EOF
		}
		c.rec, c.i = c.rr.Record(), 0
	}
	c.i++
	c.row++
	return c.rec, c.i - 1, nil
}

func (c *rowCursor) close() { c.rr.Release() }

// column returns the column called name in rec, or nil.
func column(rec arrow.Record, name string) arrow.Array {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return nil
	}
	return rec.Column(idx[0])
}

// WriteParquet writes n rows to a zstd-compressed Parquet file at path that appears only once
// complete, with schema (its metadata included) stored for Arrow readers. row appends row i to
// the builders, in schema order, and returns its approximate size in bytes: row groups are cut at
// 64K rows or 16 MB, so memory stays bounded by one row group.
func WriteParquet(path string, schema *arrow.Schema, n int, row func(b *array.RecordBuilder, i int) int) error {
	w, err := createParquet(path, schema)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := w.rowAdded(row(w.builder, i)); err != nil {
			w.abort()
			w.builder.Release()
			return err
		}
	}
	return w.close()
}
