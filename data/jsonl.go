package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gorstar/internal/atomicfile"
	"gorstar/internal/usererr"
)

// maxLineBytes bounds one JSONL record; longer lines are a user error rather than unbounded memory.
const maxLineBytes = 64 << 20

// lineReader reads JSON records one at a time: the lines of a JSONL file (blank lines skipped),
// or the elements of a file holding one JSON array (as many .json datasets are), optionally
// gzip-compressed. It knows where the current record is, for error messages.
type lineReader struct {
	path string
	f    *os.File
	gz   *gzip.Reader
	src  *sourceReader  // what the scanner or decoder reads, remembering a read error
	scan *bufio.Scanner // JSONL
	dec  *json.Decoder  // a JSON array
	line int            // line number (JSONL) or element number (array), 1-based
	// unterminated is set when the scanner hands out a last line with no newline after it: if
	// the source failed, that line is cut short and is not the user's bad JSON.
	unterminated bool
}

// sourceReader passes reads through and keeps the first error other than io.EOF: a truncated or
// corrupt gzip stream, a failing disk.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

func openLines(path string) (*lineReader, error) {
	if err := checkInputFile(path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usererr.New("%s: %v", path, err)
	}
	var r io.Reader = f
	var gz *gzip.Reader
	if strings.HasSuffix(path, ".gz") {
		gz, err = gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, usererr.New("%s: not a gzip file: %v", path, err)
		}
		r = gz
	}
	src := &sourceReader{r: r}
	br := bufio.NewReaderSize(src, 1<<20)
	lr := &lineReader{path: path, f: f, gz: gz, src: src}
	// A .jsonl file is lines whatever they hold; a .json file may be one array of records.
	name := strings.ToLower(strings.TrimSuffix(path, ".gz"))
	lineFile := strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".ndjson")
	if !lineFile && startsWithArray(br) {
		lr.dec = json.NewDecoder(br)
		if _, err := lr.dec.Token(); err != nil {
			lr.close()
			if serr := lr.sourceError(0); serr != nil {
				return nil, serr
			}
			return nil, usererr.New("%s: invalid JSON: %v", path, err)
		}
		return lr, nil
	}
	lr.scan = bufio.NewScanner(br)
	lr.scan.Buffer(make([]byte, 0, 1<<20), maxLineBytes)
	lr.scan.Split(lr.splitLines)
	return lr, nil
}

// splitLines is bufio.ScanLines noting whether the line it hands out had no newline after it.
func (r *lineReader) splitLines(data []byte, atEOF bool) (int, []byte, error) {
	advance, token, err := bufio.ScanLines(data, atEOF)
	if token != nil {
		r.unterminated = atEOF && bytes.IndexByte(data[:advance], '\n') < 0
	}
	return advance, token, err
}

// sourceError describes a failed read of the file, nil if none: a gzip stream that ends early or
// is corrupt is named as such (what the cut-short record holds is no fault of the JSON).
func (r *lineReader) sourceError(complete int) error {
	err := r.src.err
	switch {
	case err == nil:
		return nil
	case r.gz != nil && errors.Is(err, io.ErrUnexpectedEOF):
		return usererr.New("%s: truncated gzip stream: the file ends after %d complete %s", r.path, complete, r.unit())
	case r.gz != nil && (errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader)):
		return usererr.New("%s: corrupt gzip stream after %d complete %s: %v", r.path, complete, r.unit(), err)
	}
	return usererr.New("%s: read after %d %s: %v", r.path, complete, r.unit(), err)
}

func (r *lineReader) unit() string {
	if r.dec != nil {
		return "elements"
	}
	return "lines"
}

// startsWithArray peeks past a byte-order mark and white space for a '['.
func startsWithArray(br *bufio.Reader) bool {
	head, _ := br.Peek(4096)
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) > 0 && head[0] == '[' {
		if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
			br.Discard(3)
		}
		return true
	}
	return false
}

// where names the current record: "file.jsonl:57" or "file.json element 57".
func (r *lineReader) where() string {
	if r.dec != nil {
		return fmt.Sprintf("%s element %d", r.path, r.line)
	}
	return fmt.Sprintf("%s:%d", r.path, r.line)
}

// next returns the next record (valid until the following call); io.EOF at the end.
func (r *lineReader) next() ([]byte, error) {
	if r.dec != nil {
		return r.nextElement()
	}
	for r.scan.Scan() {
		r.line++
		line := bytes.TrimSpace(r.scan.Bytes())
		if r.line == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // a UTF-8 byte-order mark
		}
		if r.unterminated {
			if err := r.sourceError(r.line - 1); err != nil {
				return nil, err
			}
		}
		if len(line) > 0 {
			return line, nil
		}
	}
	if err := r.sourceError(r.line); err != nil {
		return nil, err
	}
	if err := r.scan.Err(); err != nil {
		r.line++
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, usererr.New("%s: line longer than %d MiB", r.where(), maxLineBytes>>20)
		}
		return nil, usererr.New("%s: %v", r.where(), err)
	}
	return nil, io.EOF
}

func (r *lineReader) nextElement() ([]byte, error) {
	if !r.dec.More() {
		if _, err := r.dec.Token(); err != nil && err != io.EOF { // the closing ']'
			if serr := r.sourceError(r.line); serr != nil {
				return nil, serr
			}
			return nil, usererr.New("%s: after element %d: invalid JSON: %v", r.path, r.line, err)
		}
		// Read the stream to its end so that a gzip trailer cut off or wrong is still caught.
		io.Copy(io.Discard, r.src)
		if serr := r.sourceError(r.line); serr != nil {
			return nil, serr
		}
		return nil, io.EOF
	}
	r.line++
	var raw json.RawMessage
	if err := r.dec.Decode(&raw); err != nil {
		if serr := r.sourceError(r.line - 1); serr != nil {
			return nil, serr
		}
		return nil, usererr.New("%s: invalid JSON: %v", r.where(), err)
	}
	return raw, nil
}

func (r *lineReader) close() error {
	if r.gz != nil {
		r.gz.Close()
	}
	return r.f.Close()
}

// jsonlWriter writes one JSON value per line to a file that appears only on close.
type jsonlWriter struct {
	path string
	out  *atomicfile.File
	gz   *gzip.Writer
	buf  *bufio.Writer
	err  error
}

func createJSONL(path string) (*jsonlWriter, error) {
	out, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	w := &jsonlWriter{path: path, out: out}
	var sink io.Writer = out
	if strings.HasSuffix(path, ".gz") {
		w.gz = gzip.NewWriter(out)
		sink = w.gz
	}
	w.buf = bufio.NewWriterSize(sink, 1<<20)
	return w, nil
}

// writeLine writes line (without its newline).
func (w *jsonlWriter) writeLine(line []byte) error {
	if w.err != nil {
		return w.err
	}
	if _, err := w.buf.Write(line); err != nil {
		w.err = fmt.Errorf("write %s: %w", w.path, err)
		return w.err
	}
	if err := w.buf.WriteByte('\n'); err != nil {
		w.err = fmt.Errorf("write %s: %w", w.path, err)
	}
	return w.err
}

func (w *jsonlWriter) close() error {
	if w.err != nil {
		w.out.Abort()
		return w.err
	}
	if err := w.buf.Flush(); err != nil {
		w.out.Abort()
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if w.gz != nil {
		if err := w.gz.Close(); err != nil {
			w.out.Abort()
			return fmt.Errorf("write %s: %w", w.path, err)
		}
	}
	return w.out.Commit()
}

func (w *jsonlWriter) abort() { w.out.Abort() }

// fileFormat names how a path is stored, judged by its extension.
type fileFormat int

const (
	formatUnknown fileFormat = iota
	formatParquet
	formatJSONL
)

func formatOf(path string) fileFormat {
	p := strings.ToLower(strings.TrimSuffix(path, ".gz"))
	switch {
	case strings.HasSuffix(p, ".parquet") || strings.HasSuffix(p, ".pq"):
		return formatParquet
	case strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".ndjson") || strings.HasSuffix(p, ".json"):
		return formatJSONL
	}
	return formatUnknown
}

// unknownFormat is the user error for a path whose extension names no format gorstar writes.
func unknownFormat(path string) error {
	return usererr.New("%s: unknown file format: name it .parquet or .jsonl (optionally .jsonl.gz)", path)
}
