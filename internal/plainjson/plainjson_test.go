package plainjson

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

func TestNoHTMLEscaping(t *testing.T) {
	v := map[string]any{"text": "<reason>a < b && c > d</reason>", "n": 1}
	const want = `{"n":1,"text":"<reason>a < b && c > d</reason>"}`
	got, err := Marshal(v)
	if err != nil || string(got) != want {
		t.Fatalf("Marshal = %s, %v; want %s", got, err, want)
	}
	std, _ := json.Marshal(v)
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal(std, &b) != nil || !equalJSON(a, b) {
		t.Errorf("Marshal's %s and json.Marshal's %s decode differently", got, std)
	}
	var buf bytes.Buffer
	if err := NewEncoder(&buf).Encode(v); err != nil || buf.String() != want+"\n" {
		t.Errorf("Encoder wrote %q, %v", buf.String(), err)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Error("Marshal of a func: no error")
	}
}

func TestWriteHTTP(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteHTTP(rec, 429, map[string]string{"error": "queue full: <busy>"})
	if rec.Code != 429 || rec.Header().Get("Content-Type") != "application/json" ||
		rec.Body.String() != `{"error":"queue full: <busy>"}`+"\n" {
		t.Errorf("got %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
