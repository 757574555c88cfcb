package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// pythonJSON re-writes a JSON value the way Python's json.dumps(ensure_ascii=False) does, which is
// how Hugging Face chat templates print tool calls and schemas: ", " and ": " separators, non-ASCII
// characters as themselves, key order kept. Models trained on that spelling expect it.
func pythonJSON(raw []byte) (string, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "", errors.New("empty JSON value")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		object bool
		n      int // tokens written in this container so far
	}
	var stack []frame
	var b strings.Builder
	values := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("invalid JSON: %w", err)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			b.WriteByte(byte(d))
			stack = stack[:len(stack)-1]
			continue
		}
		if len(stack) == 0 {
			values++
			if values > 1 {
				return "", errors.New("invalid JSON: more than one value")
			}
		} else {
			top := &stack[len(stack)-1]
			switch {
			case top.object && top.n%2 == 1:
				b.WriteString(": ")
			case top.n > 0:
				b.WriteString(", ")
			}
			top.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			b.WriteByte(byte(v))
			stack = append(stack, frame{object: v == '{'})
		case string:
			writePythonString(&b, v)
		case json.Number:
			b.WriteString(v.String())
		case bool:
			fmt.Fprint(&b, v)
		case nil:
			b.WriteString("null")
		}
	}
	if len(stack) > 0 || values == 0 {
		return "", errors.New("invalid JSON: unexpected end")
	}
	return b.String(), nil
}

func writePythonString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// PythonJSON re-writes a JSON value as Python's json.dumps(ensure_ascii=False) prints it: how
// chat templates print tool calls, and how vLLM and SGLang return a parsed call's arguments, so
// a call a client sends back renders as the model wrote it.
func PythonJSON(raw []byte) (string, error) { return pythonJSON(raw) }
