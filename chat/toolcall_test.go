package chat

import (
	"strings"
	"testing"
)

func TestParseToolCall(t *testing.T) {
	cases := []struct {
		name     string
		text     string
		found    bool
		call     string // name + " " + arguments, when valid
		errHas   string // part of the error text, when malformed
		spanText string // text[Start:End]
	}{
		{"none", "The answer is 4.", false, "", "", ""},
		{"valid", "x\n<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": \"print(1)\"}}\n</tool_call>", true,
			`python {"code":"print(1)"}`, "", "<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": \"print(1)\"}}\n</tool_call>"},
		{"first of two", `<tool_call>{"name":"a","arguments":{}}</tool_call><tool_call>{"name":"b","arguments":{}}</tool_call>`, true,
			`a {}`, "", `<tool_call>{"name":"a","arguments":{}}</tool_call>`},
		{"arguments as a string", `<tool_call>{"name":"python","arguments":"{\"code\": \"1\"}"}</tool_call>`, true,
			`python {"code":"1"}`, "", ""},
		{"unclosed but complete", "<tool_call>\n{\"name\":\"python\",\"arguments\":{\"code\":\"2\"}}\n", true, `python {"code":"2"}`, "", ""},
		{"bad JSON", `<tool_call>{"name": "python", "arguments": {"code": "1"}</tool_call>`, true, "", "not a JSON object", ""},
		{"unclosed and bad", `<tool_call>{"name": "py`, true, "", "missing its closing </tool_call>", ""},
		{"no name", `<tool_call>{"arguments": {}}</tool_call>`, true, "", `"name"`, ""},
		{"no arguments", `<tool_call>{"name": "python"}</tool_call>`, true, "", `no "arguments"`, ""},
		{"arguments not an object", `<tool_call>{"name": "python", "arguments": [1]}</tool_call>`, true, "", "must be a JSON object", ""},
		{"two objects", `<tool_call>{"name":"a","arguments":{}} {"name":"b","arguments":{}}</tool_call>`, true, "", "one call per turn", ""},
		{"empty", `<tool_call></tool_call>`, true, "", "empty", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, found := ParseToolCall(c.text)
			if found != c.found {
				t.Fatalf("found = %v", found)
			}
			if !found {
				return
			}
			if c.call != "" {
				if got.Error != "" || got.Call.Name+" "+string(got.Call.Arguments) != c.call {
					t.Fatalf("call = %s %s, error %q; want %s", got.Call.Name, got.Call.Arguments, got.Error, c.call)
				}
			} else if !strings.Contains(got.Error, c.errHas) || !strings.HasPrefix(got.Error, "Error: ") {
				t.Fatalf("error %q, want it to mention %q", got.Error, c.errHas)
			}
			if c.spanText != "" && c.text[got.Start:got.End] != c.spanText {
				t.Fatalf("span %q", c.text[got.Start:got.End])
			}
		})
	}
}

// ParseToolCall never panics, and its span always lies inside the text.
func FuzzParseToolCall(f *testing.F) {
	for _, s := range []string{"", "<tool_call>", `<tool_call>{"name":"a","arguments":{}}</tool_call>`,
		`x<tool_call>{"name":1}</tool_call>`, `<tool_call>{"name":"a","arguments":"{\"b\":"}</tool_call>`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		call, found := ParseToolCall(text)
		if !found {
			return
		}
		if call.Start < 0 || call.End > len(text) || call.Start >= call.End {
			t.Fatalf("span [%d, %d) in %d bytes", call.Start, call.End, len(text))
		}
		if (call.Error == "") == (call.Call.Name == "") {
			t.Fatalf("call %+v", call)
		}
	})
}
