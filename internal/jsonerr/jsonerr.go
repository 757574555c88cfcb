// Package jsonerr turns encoding/json's decoding errors into messages for the person who wrote
// the JSON: the field and the JSON type it wants ("max_tokens: expected an integer, got a
// string"), never the Go type it was being decoded into ("serve.completionRequest").
package jsonerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Describe returns err, from json.Unmarshal or a json.Decoder, as a one-line message. Field paths
// are json's dotted ones with the names of embedded Go structs removed (embedded lists every
// embedded struct type name a caller uses, e.g. "commonRequest"). Field is the path of the bad
// field, empty for the whole body or a syntax error.
func Describe(err error, embedded ...string) (msg, field string) {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field = cleanField(te.Field, embedded)
		msg = fmt.Sprintf("expected %s, got %s", Want(te.Type), got(te.Value))
		if field != "" {
			msg = field + ": " + msg
		}
		return msg, field
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: ")), ""
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// A Decoder with DisallowUnknownFields; json has no error type for it.
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return "unknown field " + name, strings.Trim(name, `"`)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "invalid JSON: it ends before the value is complete", ""
	case errors.Is(err, io.EOF):
		return "invalid JSON: empty", ""
	}
	return "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: "), ""
}

// Want names the JSON value a Go type takes: "an object", "a list", "a string", "an integer",
// "a number", "true or false".
func Want(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another JSON value"
}

// got names the JSON value json reports: "array" → "a list", "number -1" → "the number -1".
func got(v string) string {
	word, rest, _ := strings.Cut(v, " ")
	switch word {
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "number":
		if rest != "" {
			return "the number " + rest
		}
		return "a number"
	}
	return v
}

func cleanField(f string, embedded []string) string {
	parts := strings.Split(f, ".")
	out := parts[:0]
	for _, p := range parts {
		isEmbedded := false
		for _, e := range embedded {
			isEmbedded = isEmbedded || p == e
		}
		if !isEmbedded && p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ".")
}
