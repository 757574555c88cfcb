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

	"gorstar/atomicfile"
	"gorstar/usererr"
)

// maxLineBytes bounds one JSONL record; longer lines are a user error rather than unbounded memory.
const maxLineBytes = 64 << 20

// lineReader reads a JSONL file (optionally gzip-compressed) line by line, skipping blank lines and
// counting lines for error messages.
type lineReader struct {
	path    string
	f       *os.File
	gz      *gzip.Reader
	counted *countingReader
	scan    *bufio.Scanner
	line    int
}

func openLines(path string) (*lineReader, error) {
	if err := checkInputFile(path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usererr.New("%s: %v", path, err)
	}
	counted := &countingReader{r: f}
	var r io.Reader = counted
	var gz *gzip.Reader
	if strings.HasSuffix(path, ".gz") {
		gz, err = gzip.NewReader(counted)
		if err != nil {
			f.Close()
			return nil, usererr.New("%s: not a gzip file: %v", path, err)
		}
		r = gz
	}
	scan := bufio.NewScanner(r)
	scan.Buffer(make([]byte, 0, 1<<20), maxLineBytes)
	return &lineReader{path: path, f: f, gz: gz, counted: counted, scan: scan}, nil
}

// next returns the next non-blank line (valid until the following call) and its 1-based number;
// io.EOF at the end.
func (r *lineReader) next() ([]byte, int, error) {
	for r.scan.Scan() {
		r.line++
		line := bytes.TrimSpace(r.scan.Bytes())
		if len(line) > 0 {
			return line, r.line, nil
		}
	}
	if err := r.scan.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, r.line + 1, usererr.New("%s:%d: line longer than %d MiB", r.path, r.line+1, maxLineBytes>>20)
		}
		return nil, r.line + 1, usererr.New("%s:%d: %v", r.path, r.line+1, err)
	}
	return nil, r.line, io.EOF
}

// bytesRead is how far into the file (compressed bytes) reading has got, for progress.
func (r *lineReader) bytesRead() int64 { return r.counted.n }

func (r *lineReader) close() error {
	if r.gz != nil {
		r.gz.Close()
	}
	return r.f.Close()
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
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

// jsonMarshal encodes v without escaping <, > and & (tags like <reason> stay readable).
func jsonMarshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
