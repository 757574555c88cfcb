package data

import (
	"encoding/json"
	"testing"
)

// unquoteJSON must agree with encoding/json on every string it accepts.
func TestUnquoteJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `back\slash`, "quote\"s", "tab\tnew\nline\r", "\b\f", "ünïcode ✓", "emoji 😀 pair",
		"</script> & <b>", `$\frac{1}{2}$`, "\x01 control", "slash /",
	} {
		for _, raw := range [][]byte{mustJSON(t, s), []byte(`"` + asciiEscaped(s) + `"`)} {
			got, ok := unquoteJSON(raw)
			var want string
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if ok && got != want {
				t.Errorf("%s: got %q, want %q", raw, got, want)
			}
			if !ok {
				t.Errorf("%s: not handled", raw)
			}
		}
	}
	for _, raw := range []string{`"\ud800"`, `"\ud800\u0041"`, "\"\xff\""} {
		if _, ok := unquoteJSON([]byte(raw)); ok {
			t.Errorf("%s: should be left to encoding/json", raw)
		}
	}
}

func mustJSON(t *testing.T, s string) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// asciiEscaped writes s with every non-ASCII rune and control byte as \uXXXX (surrogate pairs
// above the BMP), the way Python's json.dumps does.
func asciiEscaped(s string) string {
	var out []byte
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			out = append(out, '\\', byte(r))
		case r < 0x20 || r > 0x7e:
			if r > 0xffff {
				r -= 0x10000
				out = append(out, []byte(fmtU(0xd800+(r>>10))+fmtU(0xdc00+(r&0x3ff)))...)
			} else {
				out = append(out, []byte(fmtU(r))...)
			}
		default:
			out = append(out, byte(r))
		}
	}
	return string(out)
}

func fmtU(r rune) string {
	const hex = "0123456789abcdef"
	return `\u` + string([]byte{hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15]})
}
