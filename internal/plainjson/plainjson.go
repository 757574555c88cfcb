// Package plainjson writes JSON the way gorstar writes it everywhere: without encoding/json's HTML
// escaping, so that the model's tags (<reason>, </tool_call>) and comparisons (a < b) stay
// readable in traces, tables, API responses and command output. It is one place for the setting a
// copy per package would forget.
package plainjson

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// NewEncoder returns a json.Encoder on w that does not escape <, > and &.
func NewEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// Marshal is json.Marshal without HTML escaping.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// WriteHTTP answers an HTTP request with status and v as a JSON body (one line). An error writing
// the body is the client's gone connection, which the handler cannot report to anyone.
func WriteHTTP(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = NewEncoder(w).Encode(v)
}
