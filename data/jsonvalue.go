package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"gorstar/internal/usererr"
)

// decodeObject parses one JSONL line as an object. Errors read "invalid JSON: …" or "expected a
// JSON object, got …" so that callers can prefix file and line.
func decodeObject(line []byte) (map[string]json.RawMessage, error) {
	return decodeObjectInto(line, nil)
}

// decodeObjectInto is decodeObject reusing obj's storage (it is cleared first), to spare an
// allocation per line on big imports.
func decodeObjectInto(line []byte, obj map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	clear(obj)
	if err := json.Unmarshal(line, &obj); err != nil {
		if !json.Valid(line) {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		return nil, fmt.Errorf("expected a JSON object, got %s", jsonKind(line))
	}
	if obj == nil {
		return nil, fmt.Errorf("expected a JSON object, got null")
	}
	return obj, nil
}

func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// jsonText returns a JSON value as text: a string's contents, a number or boolean as written,
// arrays and objects as compact JSON. ok is false for null or an absent value.
func jsonText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	if raw[0] == '"' {
		if s, ok := unquoteJSON(raw); ok {
			return s, true
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	if raw[0] == '[' || raw[0] == '{' {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			return b.String(), true
		}
	}
	return string(raw), true
}

// sniffFormat decides how to read path: by extension, else by the Parquet magic bytes.
func sniffFormat(path string) (fileFormat, error) {
	if err := checkInputFile(path); err != nil {
		return formatUnknown, err
	}
	if f := formatOf(path); f != formatUnknown {
		return f, nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return formatUnknown, usererr.New("%s: %v", path, err)
	}
	defer fh.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(fh, magic); err == nil && string(magic) == "PAR1" {
		return formatParquet, nil
	}
	return formatJSONL, nil
}

// fieldNames lists an object's keys, sorted, for error messages.
func fieldNames(obj map[string]json.RawMessage) string {
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// emptyJSONL is the user error for a JSONL file with nothing but blank lines.
func emptyJSONL(path string) error {
	return usererr.New("%s: no rows (only blank lines)", path)
}

// unquoteJSON decodes a JSON string token that a JSON decoder has already validated, without
// validating it again (the hot path of big imports). ok is false when it meets something it does
// not handle (invalid UTF-8, a lone surrogate), leaving that to encoding/json.
func unquoteJSON(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if !utf8.Valid(inner) {
		return "", false
	}
	first := bytes.IndexByte(inner, '\\')
	if first < 0 {
		return string(inner), true
	}
	out := make([]byte, 0, len(inner))
	out = append(out, inner[:first]...)
	for i := first; i < len(inner); i++ {
		c := inner[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(inner) {
			return "", false
		}
		switch inner[i] {
		case '"', '\\', '/':
			out = append(out, inner[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(inner[i+1:])
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+2 >= len(inner) || inner[i+1] != '\\' || inner[i+2] != 'u' {
					return "", false
				}
				r2, ok := hex4(inner[i+3:])
				if !ok {
					return "", false
				}
				r = utf16.DecodeRune(r, r2)
				if r == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return string(out), true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
