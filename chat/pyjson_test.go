package chat

import "testing"

func TestPythonJSON(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"b":1,"a":[1,2.50,{"c":null}],"d":true}`, `{"b": 1, "a": [1, 2.50, {"c": null}], "d": true}`},
		{`{ "code" : "print('<>&é')\n\tx=\"y\"\\" }`, `{"code": "print('<>&é')\n\tx=\"y\"\\"}`},
		{`"\u003c\u0001\u2028"`, "\"<\\u0001\u2028\""},
		{`{}`, `{}`},
		{`[]`, `[]`},
		{`[[],{}]`, `[[], {}]`},
	}
	for _, c := range cases {
		got, err := pythonJSON([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("pythonJSON(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{``, `{"a":`, `{"a":1}{}`, `[1,]`, `{'a':1}`} {
		if got, err := pythonJSON([]byte(bad)); err == nil {
			t.Errorf("pythonJSON(%q) = %q, want an error", bad, got)
		}
	}
}
