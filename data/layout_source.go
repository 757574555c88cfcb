package data

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"gorstar/internal/usererr"
)

// recordReader yields the rows of a JSONL or Parquet file as JSON objects, each with where it is.
type recordReader interface {
	next() (map[string]json.RawMessage, string, error) // io.EOF at the end
	has(col string) bool                               // a column of the file (JSONL: of its first row)
	columns() string                                   // the columns found, for messages
	close() error
}

type jsonlRecords struct {
	lines *lineReader
	first map[string]json.RawMessage
}

func (r *jsonlRecords) next() (map[string]json.RawMessage, string, error) {
	line, err := r.lines.next()
	if err != nil {
		return nil, "", err
	}
	obj, err := decodeObject(line)
	if err != nil {
		return nil, "", usererr.New("%s: %v", r.lines.where(), err)
	}
	if r.first == nil {
		r.first = obj
	}
	return obj, r.lines.where(), nil
}

func (r *jsonlRecords) has(col string) bool { _, ok := r.first[col]; return ok }
func (r *jsonlRecords) columns() string     { return fieldNames(r.first) }
func (r *jsonlRecords) close() error        { return r.lines.close() }

type parquetRecords struct {
	file   *parquetFile
	cursor *rowCursor
	names  []string
}

func (r *parquetRecords) next() (map[string]json.RawMessage, string, error) {
	rec, i, err := r.cursor.next()
	if err != nil {
		return nil, "", err
	}
	obj := make(map[string]json.RawMessage, len(r.names))
	for _, name := range r.names {
		obj[name] = jsonAt(column(rec, name), i)
	}
	return obj, fmt.Sprintf("%s row %d", r.file.path, r.cursor.row), nil
}

func (r *parquetRecords) has(col string) bool { return r.file.fieldIndex(col) >= 0 }
func (r *parquetRecords) columns() string     { return strings.Join(r.names, ", ") }
func (r *parquetRecords) close() error {
	r.cursor.close()
	return r.file.close()
}

func openRecords(ctx context.Context, path string) (recordReader, error) {
	f, err := sniffFormat(path)
	if err != nil {
		return nil, err
	}
	if f == formatJSONL {
		lines, err := openLines(path)
		if err != nil {
			return nil, err
		}
		return &jsonlRecords{lines: lines}, nil
	}
	pf, err := openParquet(path)
	if err != nil {
		return nil, err
	}
	cursor, err := pf.cursor(ctx, nil)
	if err != nil {
		pf.close()
		return nil, err
	}
	return &parquetRecords{file: pf, cursor: cursor, names: pf.columnNames()}, nil
}

// layoutSource maps the rows of a file in one of the public evaluation layouts.
type layoutSource struct {
	l       *layout
	path    string
	records recordReader
	first   map[string]json.RawMessage // read ahead to recognize the layout
	where   string
	meta    metaBuilder
	skip    map[string]bool // columns not copied to meta
}

func (s *layoutSource) close() error { return s.records.close() }

func (s *layoutSource) next() (importedRow, error) {
	obj, where := s.first, s.where
	if obj != nil {
		s.first = nil
	} else {
		var err error
		if obj, where, err = s.records.next(); err != nil {
			return importedRow{}, err
		}
	}
	row := s.l.mapRow(obj, sourceName(s.path))
	s.meta.reset()
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !s.skip[k] {
			s.meta.add(k, obj[k])
		}
	}
	row.Meta = s.meta.text()
	if row = finishRow(row); row.missing != "" {
		row.where = where
	}
	return row, nil
}

// openLayoutSource opens path in layout named (nil: recognize it from the columns). It returns a
// nil source, and no error, when named is nil and no layout fits: the caller maps the file by
// column names instead.
func openLayoutSource(ctx context.Context, path string, named *layout) (rowSource, error) {
	records, err := openRecords(ctx, path)
	if err != nil {
		return nil, err
	}
	first, where, err := records.next()
	if err == io.EOF {
		records.close()
		return nil, nil // the column mapping reports the empty file
	}
	if err != nil {
		records.close()
		return nil, err
	}
	l := named
	if l == nil {
		if l = detectLayout(records.has, first); l == nil {
			records.close()
			return nil, nil
		}
	} else if err := l.checkColumns(path, records.has, records.columns()); err != nil {
		records.close()
		return nil, err
	}
	s := &layoutSource{l: l, path: path, records: records, first: first, where: where, skip: map[string]bool{}}
	for _, c := range l.problemCols {
		s.skip[c] = true
	}
	if l.idCol != "" {
		s.skip[l.idCol] = true
	}
	return s, nil
}
