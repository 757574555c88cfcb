package jsonerr

import (
	"encoding/json"
	"strings"
	"testing"
)

type inner struct {
	Role string `json:"role"`
}

type common struct {
	MaxTokens *int `json:"max_tokens"`
}

type request struct {
	common
	Messages []inner `json:"messages"`
	Flag     bool    `json:"flag"`
	Temp     float64 `json:"temp"`
}

func TestDescribe(t *testing.T) {
	cases := []struct {
		body, msg, field string
	}{
		{`[]`, "expected an object, got a list", ""},
		{`"x"`, "expected an object, got a string", ""},
		{`{"max_tokens": "5"}`, "max_tokens: expected an integer, got a string", "max_tokens"},
		{`{"max_tokens": 1.5}`, "max_tokens: expected an integer, got the number 1.5", "max_tokens"},
		{`{"messages": {}}`, "messages: expected a list, got an object", "messages"},
		{`{"messages": [{"role": 3}]}`, "messages.role: expected a string, got a number", "messages.role"},
		{`{"flag": "yes"}`, "flag: expected true or false, got a string", "flag"},
		{`{"temp": []}`, "temp: expected a number, got a list", "temp"},
		{`{"temp": }`, "invalid JSON at byte 10: invalid character '}' looking for beginning of value", ""},
		{`{"temp": 1`, "invalid JSON at byte 10: unexpected end of JSON input", ""},
	}
	for _, c := range cases {
		var r request
		err := json.Unmarshal([]byte(c.body), &r)
		if err == nil {
			t.Fatalf("%s: no error", c.body)
		}
		msg, field := Describe(err, "common")
		if msg != c.msg || field != c.field {
			t.Errorf("%s: (%q, %q), want (%q, %q)", c.body, msg, field, c.msg, c.field)
		}
		if strings.Contains(msg, "jsonerr.") || strings.Contains(msg, "Go ") {
			t.Errorf("%s: Go type in %q", c.body, msg)
		}
	}
	var m map[string]json.RawMessage
	msg, _ := Describe(json.Unmarshal([]byte(`[1]`), &m))
	if msg != "expected an object, got a list" {
		t.Errorf("map: %q", msg)
	}
	dec := json.NewDecoder(strings.NewReader(`{"flag": true, "flagg": 1}`))
	dec.DisallowUnknownFields()
	var r request
	if msg, field := Describe(dec.Decode(&r)); msg != `unknown field "flagg"` || field != "flagg" {
		t.Errorf("unknown field: (%q, %q)", msg, field)
	}
	msg, _ = Describe(json.NewDecoder(strings.NewReader("")).Decode(&m))
	if msg != "invalid JSON: empty" {
		t.Errorf("empty: %q", msg)
	}
}
