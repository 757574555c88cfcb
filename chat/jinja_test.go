package chat

import (
	"encoding/json"
	"gorstar/internal/testenv"
	"gorstar/internal/testmodel"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The harness renders like transformers' apply_chat_template: a sandboxed Jinja environment with
// trim_blocks, lstrip_blocks and a tojson that keeps non-ASCII text and key order.
const jinjaHarness = `
import json, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
out = []
for case in json.load(open(sys.argv[1]))["cases"]:
    out.append(env.from_string(case["template"]).render(
        messages=case["messages"], tools=case["tools"], add_generation_prompt=case["add_generation_prompt"]))
print(json.dumps(out))
`

// The Jinja versions of the built-in templates render the same text as the Go ones.
func TestHFChatTemplatesMatch(t *testing.T) {
	testenv.Short(t, "renders with Python's jinja2")
	python := testenv.Python3(t)
	testenv.PythonModule(t, python, "jinja2", "python3-jinja2")
	tok := testmodel.Tokenizer(t)
	conversations := [][]Message{
		sampleConversation(),
		{{Role: RoleSystem, Content: "Be brief. ü"}, {Role: RoleUser, Content: "hi"}, {Role: RoleAssistant, Content: "hello"}},
		{{Role: RoleUser, Content: "call twice"}, {Role: RoleAssistant, ToolCalls: []ToolCall{
			{Name: "python", Arguments: json.RawMessage(`{"code": "print(1)"}`)},
			{Name: "python", Arguments: json.RawMessage(`{"code": "x = \"é\"\nprint(x)", "input": "5"}`)},
		}}, {Role: RoleTool, Content: "1"}},
		{},
	}
	type jinjaCase struct {
		Template            string            `json:"template"`
		Messages            []json.RawMessage `json:"messages"`
		Tools               []json.RawMessage `json:"tools"`
		AddGenerationPrompt bool              `json:"add_generation_prompt"`
	}
	var cases []jinjaCase
	var want []string
	for _, name := range TemplateNames() {
		tmpl, err := LoadTemplate(name)
		if err != nil {
			t.Fatal(err)
		}
		jinja, err := HFChatTemplate(name)
		if err != nil {
			t.Fatal(err)
		}
		opts := DefaultOptions()
		opts.Template = tmpl
		if name == "chatml" {
			opts.Primer = ""
		}
		r, err := NewRenderer(tok, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, conv := range conversations {
			for _, gen := range []bool{false, true} {
				text, err := r.Text(conv, gen)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, text)
				msgs := []json.RawMessage{}
				for _, m := range conv {
					b, _ := json.Marshal(m)
					msgs = append(msgs, b)
				}
				cases = append(cases, jinjaCase{Template: jinja, Messages: msgs, Tools: opts.Tools, AddGenerationPrompt: gen})
			}
		}
	}
	req, _ := json.Marshal(map[string]any{"cases": cases})
	dir := t.TempDir()
	reqPath, scriptPath := filepath.Join(dir, "cases.json"), filepath.Join(dir, "render.py")
	os.WriteFile(reqPath, req, 0o644)
	os.WriteFile(scriptPath, []byte(jinjaHarness), 0o644)
	out, err := exec.Command(python, scriptPath, reqPath).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("jinja harness: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("harness output: %v\n%s", err, out)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("case %d: Jinja rendered\n%q\nGo rendered\n%q", i, got[i], want[i])
		}
	}
}
