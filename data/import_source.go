package data

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"gorstar/internal/usererr"
)

// importedRow is one input row mapped to a problem. Missing names the required column the row
// lacks ("problem" or "answer"), in which case the row is skipped.
type importedRow struct {
	Problem
	where   string // "file.jsonl:12" or "file.parquet row 12"
	missing string
}

// rowSource yields mapped rows from one input file.
type rowSource interface {
	next() (importedRow, error) // io.EOF at the end
	close() error
}

// sourceName is the default source of rows from path: its base name without extensions, or,
// when that names a split rather than a set (test.jsonl, train-00000-of-00001.parquet), the
// nearest folder that does not (aime24/test.jsonl → aime24; math500/data/test-….parquet → math500).
func sourceName(path string) string {
	name := stripExtensions(filepath.Base(path))
	if !isSplitName(name) {
		return name
	}
	dir := filepath.Dir(path)
	if abs, err := filepath.Abs(path); err == nil {
		dir = filepath.Dir(abs)
	}
	for {
		parent := filepath.Base(dir)
		if parent == "." || parent == string(filepath.Separator) {
			return name
		}
		if !isSplitName(parent) {
			return parent
		}
		dir = filepath.Dir(dir)
	}
}

func stripExtensions(base string) string {
	for {
		ext := filepath.Ext(base)
		if ext == "" || ext == base {
			return base
		}
		base = strings.TrimSuffix(base, ext)
	}
}

// splitShard is the shard suffix Hugging Face gives Parquet files ("-00000-of-00001").
var splitShard = regexp.MustCompile(`-\d+-of-\d+$`)

// isSplitName reports whether a file or folder name names a split or a data folder, not a set.
func isSplitName(name string) bool {
	switch strings.ToLower(splitShard.ReplaceAllString(name, "")) {
	case "test", "train", "validation", "valid", "val", "dev", "eval", "data", "default", "main", "full":
		return true
	}
	return false
}

// jsonlSource maps JSONL objects; the field for each column is chosen from the first row.
type jsonlSource struct {
	path     string
	lines    *lineReader
	mapping  Mapping
	resolved bool
	fields   struct{ problem, answer string }
	obj      map[string]json.RawMessage // reused for every line
	meta     metaBuilder
	rows     int64
}

func openJSONLSource(path string, m Mapping) (*jsonlSource, error) {
	lines, err := openLines(path)
	if err != nil {
		return nil, err
	}
	return &jsonlSource{path: path, lines: lines, mapping: m}, nil
}

func (s *jsonlSource) close() error { return s.lines.close() }

func (s *jsonlSource) next() (importedRow, error) {
	line, err := s.lines.next()
	if err == io.EOF && s.rows == 0 {
		return importedRow{}, usererr.New("%s: no rows (only blank lines)", s.path)
	}
	if err != nil {
		return importedRow{}, err
	}
	s.rows++
	obj, err := decodeObjectInto(line, s.obj)
	if err != nil {
		return importedRow{}, usererr.New("%s: %v", s.lines.where(), err)
	}
	s.obj = obj
	if !s.resolved {
		if err := s.resolve(obj); err != nil {
			return importedRow{}, err
		}
	}
	row := importedRow{}
	problemRaw := lookupJSON(obj, s.fields.problem)
	row.Problem.Problem = strings.TrimSpace(problemFromJSON(problemRaw))
	row.Answer = answerText(lookupJSON(obj, s.fields.answer))
	row.Answer = strings.TrimSpace(row.Answer)
	// id and source are optional: looked up in each row, since JSONL rows need not share keys.
	used := [4]string{topLevel(s.fields.problem), topLevel(s.fields.answer)}
	has := func(path string) bool { return lookupJSON(obj, path) != nil }
	if f := pickField(candidates(s.mapping.ID, DefaultIDFields), has); f != "" {
		row.ID, _ = jsonText(lookupJSON(obj, f))
		used[2] = topLevel(f)
	}
	row.Source = sourceName(s.path)
	if f := pickField(candidates(s.mapping.Source, DefaultSourceFields), has); f != "" {
		row.Source, _ = jsonText(lookupJSON(obj, f))
		used[3] = topLevel(f)
	}
	s.meta.reset()
	for k, v := range obj {
		if k != used[0] && k != used[1] && k != used[2] && k != used[3] {
			s.meta.add(k, v)
		}
	}
	row.Meta = s.meta.text()
	if row = finishRow(row); row.missing != "" {
		row.where = s.lines.where()
	}
	return row, nil
}

// resolve picks the field for each column from the first row; a required one that is absent is a
// user error that lists the fields found.
func (s *jsonlSource) resolve(obj map[string]json.RawMessage) error {
	has := func(path string) bool { return lookupJSON(obj, path) != nil }
	required := func(col, explicit string, defaults []string) (string, error) {
		cands := candidates(explicit, defaults)
		if f := pickField(cands, has); f != "" {
			return f, nil
		}
		return "", usererr.New("%s: no %s field %s (fields found: %s); map them with %s", s.lines.where(), col, quoteList(cands), fieldNames(obj), describeLayouts())
	}
	var err error
	if s.fields.problem, err = required("problem", s.mapping.Problem, DefaultProblemFields); err != nil {
		return err
	}
	if s.mapping.answerOptional {
		s.fields.answer = pickField(candidates(s.mapping.Answer, DefaultAnswerFields), has)
	} else if s.fields.answer, err = required("answer", s.mapping.Answer, DefaultAnswerFields); err != nil {
		return err
	}
	if s.mapping.ID != "" && !has(s.mapping.ID) {
		return usererr.New("%s: no id field %q (fields found: %s)", s.lines.where(), s.mapping.ID, fieldNames(obj))
	}
	s.resolved = true
	return nil
}

// quoteList renders candidate names for messages: "x" or one of "a", "b".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return "(tried " + strings.Join(q, ", ") + ")"
}

// lookupJSON follows a dotted path into nested objects; nil when absent or null.
func lookupJSON(obj map[string]json.RawMessage, path string) json.RawMessage {
	if path == "" {
		return nil
	}
	top, rest, nested := strings.Cut(path, ".")
	raw, ok := obj[top]
	if !ok || string(raw) == "null" {
		return nil
	}
	if !nested {
		return raw
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(raw, &inner) != nil {
		return nil
	}
	return lookupJSON(inner, rest)
}

// problemFromJSON reads a problem value: a string, or a chat (a list of {role, content}) whose
// last user turn is the problem.
func problemFromJSON(raw json.RawMessage) string {
	if len(raw) > 0 && raw[0] == '[' {
		var msgs []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &msgs) == nil {
			for i := len(msgs) - 1; i >= 0; i-- {
				if msgs[i].Role == "user" || msgs[i].Role == "" && i == len(msgs)-1 {
					text, _ := jsonText(msgs[i].Content)
					return text
				}
			}
			return ""
		}
	}
	text, _ := jsonText(raw)
	return text
}

// finishRow marks rows without a problem or answer and fills in a missing id.
func finishRow(row importedRow) importedRow {
	switch {
	case row.Problem.Problem == "":
		row.missing = "problem"
	case row.Answer == "":
		row.missing = "answer"
	}
	if row.ID == "" {
		row.ID = StableID(row.Problem.Problem)
	}
	return row
}

// parquetSource maps the columns of a Parquet file.
type parquetSource struct {
	path    string
	file    *parquetFile
	cursor  *rowCursor
	fields  struct{ problem, answer, id, source string }
	metaCol []string
	meta    metaBuilder
}

func openParquetSource(ctx context.Context, path string, m Mapping, verl bool) (*parquetSource, error) {
	f, err := openParquet(path)
	if err != nil {
		return nil, err
	}
	s := &parquetSource{path: path, file: f}
	if err := s.resolve(m, verl); err != nil {
		f.close()
		return nil, err
	}
	cursor, err := f.cursor(ctx, nil)
	if err != nil {
		f.close()
		return nil, err
	}
	s.cursor = cursor
	return s, nil
}

// hasPath reports whether the file has the column path (dotted paths go into structs).
func (s *parquetSource) hasPath(path string) bool {
	top, rest, nested := strings.Cut(path, ".")
	idx := s.file.fieldIndex(top)
	if idx < 0 {
		return false
	}
	t := s.file.schema.Field(idx).Type
	for nested {
		st, ok := t.(*arrow.StructType)
		if !ok {
			return false
		}
		var name string
		name, rest, nested = strings.Cut(rest, ".")
		f, ok := st.FieldByName(name)
		if !ok {
			return false
		}
		t = f.Type
	}
	return true
}

func (s *parquetSource) resolve(m Mapping, verl bool) error {
	problems, answers, sources := DefaultProblemFields, DefaultAnswerFields, DefaultSourceFields
	if verl {
		problems, answers, sources = []string{verlMapping.Problem}, []string{verlMapping.Answer}, []string{verlMapping.Source}
	}
	required := func(col, explicit string, defaults []string) (string, error) {
		cands := candidates(explicit, defaults)
		if f := pickField(cands, s.hasPath); f != "" {
			return f, nil
		}
		return "", usererr.New("%s: no %s column %s (columns found: %s); map them with %s", s.path, col, quoteList(cands), strings.Join(s.file.columnNames(), ", "), describeLayouts())
	}
	var err error
	if s.fields.problem, err = required("problem", m.Problem, problems); err != nil {
		return err
	}
	if m.answerOptional {
		s.fields.answer = pickField(candidates(m.Answer, answers), s.hasPath)
	} else if s.fields.answer, err = required("answer", m.Answer, answers); err != nil {
		return err
	}
	if m.ID != "" {
		if s.fields.id, err = required("id", m.ID, nil); err != nil {
			return err
		}
	} else {
		s.fields.id = pickField(DefaultIDFields, s.hasPath)
	}
	s.fields.source = pickField(candidates(m.Source, sources), s.hasPath)
	used := map[string]bool{}
	for _, f := range []string{s.fields.problem, s.fields.answer, s.fields.id, s.fields.source} {
		if f != "" {
			used[topLevel(f)] = true
		}
	}
	for _, name := range s.file.columnNames() {
		if !used[name] {
			s.metaCol = append(s.metaCol, name)
		}
	}
	if err := checkProblemColumn(s.path, s.fields.problem, s.file.schema); err != nil {
		return err
	}
	return nil
}

// checkProblemColumn accepts a problem column of text or of chat turns ({role, content} structs).
func checkProblemColumn(path, name string, sc *arrow.Schema) error {
	if strings.Contains(name, ".") {
		return nil
	}
	t := sc.Field(sc.FieldIndices(name)[0]).Type
	list, ok := t.(arrow.ListLikeType)
	if !ok {
		return nil
	}
	switch elem := list.Elem().(type) {
	case *arrow.StructType:
		if _, ok := elem.FieldByName("content"); !ok {
			return usererr.New("%s: column %q holds structs without a \"content\" field (fields found: %s)", path, name, structFieldNames(elem))
		}
	case *arrow.StringType, *arrow.LargeStringType:
	default:
		return usererr.New("%s: column %q is %s, expected text or a list of {role, content}", path, name, t)
	}
	return nil
}

func (s *parquetSource) close() error {
	s.cursor.close()
	return s.file.close()
}

func (s *parquetSource) next() (importedRow, error) {
	rec, i, err := s.cursor.next()
	if err != nil {
		return importedRow{}, err
	}
	row := importedRow{}
	row.Problem.Problem = strings.TrimSpace(problemFromArrow(arrowPath(rec, s.fields.problem, i)))
	row.Answer, _ = textAt(arrowPath(rec, s.fields.answer, i))
	row.Answer = strings.TrimSpace(row.Answer)
	if s.fields.id != "" {
		row.ID, _ = textAt(arrowPath(rec, s.fields.id, i))
	}
	row.Source = sourceName(s.path)
	if s.fields.source != "" {
		if src, ok := textAt(arrowPath(rec, s.fields.source, i)); ok {
			row.Source = src
		}
	}
	s.meta.reset()
	for _, name := range s.metaCol {
		s.meta.add(name, jsonAt(column(rec, name), i))
	}
	row.Meta = s.meta.text()
	if row = finishRow(row); row.missing != "" {
		row.where = fmt.Sprintf("%s row %d", s.path, s.cursor.row)
	}
	return row, nil
}

// arrowPath resolves a dotted column path in rec and returns the array holding it and the row
// index to read (struct children share the parent's row index).
func arrowPath(rec arrow.Record, path string, i int) (arrow.Array, int) {
	top, rest, nested := strings.Cut(path, ".")
	arr := column(rec, top)
	for nested && arr != nil {
		st, ok := arr.(*array.Struct)
		if !ok || st.IsNull(i) {
			return nil, i
		}
		var name string
		name, rest, nested = strings.Cut(rest, ".")
		arr = structField(st, name)
	}
	return arr, i
}

// problemFromArrow reads a problem cell: text, or the last user turn of a list of {role, content}.
func problemFromArrow(arr arrow.Array, i int) string {
	list, ok := arr.(array.ListLike)
	if !ok {
		text, _ := textAt(arr, i)
		return text
	}
	if list.IsNull(i) {
		return ""
	}
	start, end := list.ValueOffsets(i)
	if end == start {
		return ""
	}
	switch values := list.ListValues().(type) {
	case *array.Struct:
		role, content := structField(values, "role"), structField(values, "content")
		for j := int(end) - 1; j >= int(start); j-- {
			if values.IsNull(j) {
				continue
			}
			r, _ := textAt(role, j)
			if r == "user" || role == nil {
				text, _ := textAt(content, j)
				return text
			}
		}
		return ""
	default:
		text, _ := textAt(values, int(end)-1)
		return text
	}
}

// SourceName is the name rows of path get when nothing else names their set: the file's name, or
// its folder's when the file is named for a split (aime24/test.jsonl → aime24).
func SourceName(path string) string { return sourceName(path) }
