package chat

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"text/template"

	"gorstar/internal/usererr"
)

//go:embed templates/*.tmpl templates/*.jinja
var builtinTemplates embed.FS

// DefaultTemplate is the template used when none is named.
const DefaultTemplate = "rstar2"

// Markers a template's output carries for the renderer; Unicode noncharacters, which never occur
// in text that a user or model would write.
const (
	markGenBegin  = '\uFDD0'
	markGenEnd    = '\uFDD1'
	markTextBegin = '\uFDD2'
	markTextEnd   = '\uFDD3'
)

// Template is a parsed chat template.
type Template struct {
	Name string
	tmpl *template.Template
}

// TemplateData is what a template is executed with.
type TemplateData struct {
	Messages []Message
	// Tools are function schemas (JSON) to show in the system turn.
	Tools []json.RawMessage
	// AddGenerationPrompt asks for the header of a new assistant turn after the messages.
	AddGenerationPrompt bool
	// Primer is text the model's turn starts with, after the header (for example "<reason>").
	Primer string
}

// TemplateNames lists the built-in templates.
func TemplateNames() []string {
	entries, _ := builtinTemplates.ReadDir("templates")
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".tmpl"); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// LoadTemplate returns a built-in template by name ("" means DefaultTemplate) or parses the file at
// a path.
func LoadTemplate(nameOrPath string) (*Template, error) {
	if nameOrPath == "" {
		nameOrPath = DefaultTemplate
	}
	if src, err := builtinTemplates.ReadFile(path.Join("templates", nameOrPath+".tmpl")); err == nil {
		return ParseTemplate(nameOrPath, string(src))
	}
	src, err := os.ReadFile(nameOrPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usererr.New("chat template %q: not a built-in template (%s) and no such file",
				nameOrPath, strings.Join(TemplateNames(), ", "))
		}
		return nil, fmt.Errorf("read chat template %s: %w", nameOrPath, err)
	}
	t, err := ParseTemplate(nameOrPath, string(src))
	if err != nil {
		return nil, usererr.Wrap(err)
	}
	return t, nil
}

// ParseTemplate parses template source. Besides text/template's own functions it offers:
//
//	{{gen_begin}} … {{gen_end}}  the enclosed output is the model's (loss mask 1)
//	{{text S}}                    message text: control tokens written in it stay plain text
//	{{tool_call C}}               a ToolCall as {"name": …, "arguments": …}, arguments byte for byte
//	{{json V}}                    a JSON value (json.RawMessage or any Go value) with the same spacing
func ParseTemplate(name, src string) (*Template, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(templateFuncs).Parse(src)
	if err != nil {
		return nil, fmt.Errorf("chat template %s: %w", name, err)
	}
	return &Template{Name: name, tmpl: t}, nil
}

var templateFuncs = template.FuncMap{
	"gen_begin": func() string { return string(markGenBegin) },
	"gen_end":   func() string { return string(markGenEnd) },
	"text":      markText,
	"tool_call": func(c ToolCall) (string, error) {
		args := bytes.TrimSpace(c.Arguments)
		if len(args) == 0 || args[0] != '{' || !json.Valid(args) {
			return "", fmt.Errorf("tool call %s: arguments must be a JSON object, got %q", c.Name, c.Arguments)
		}
		var b strings.Builder
		b.WriteString(`{"name": `)
		writePythonString(&b, c.Name)
		b.WriteString(`, "arguments": `)
		b.Write(args)
		b.WriteString("}")
		return markText(b.String())
	},
	"json": func(v any) (string, error) {
		raw, ok := v.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = json.Marshal(v); err != nil {
				return "", err
			}
		}
		s, err := pythonJSON(raw)
		if err != nil {
			return "", err
		}
		return markText(s)
	},
}

func markText(s string) (string, error) {
	if strings.ContainsAny(s, string([]rune{markGenBegin, markGenEnd, markTextBegin, markTextEnd})) {
		return "", errors.New("text contains a reserved character (U+FDD0–U+FDD3)")
	}
	return string(markTextBegin) + s + string(markTextEnd), nil
}

// piece is a stretch of rendered output.
type piece struct {
	text      string
	plain     bool // message text: no control tokens
	generated bool // the model's own output
	turn      int  // the number of gen_begin before it, less one: generated, which stretch it is in
	noLoss    bool // generated, but its message has weight 0
}

// execute renders data and splits the output at the markers.
func (t *Template) execute(data TemplateData) ([]piece, error) {
	for i, m := range data.Messages {
		if err := m.validate(i); err != nil {
			return nil, err
		}
	}
	var out strings.Builder
	if err := t.tmpl.Execute(&out, data); err != nil {
		return nil, fmt.Errorf("chat template %s: %w", t.Name, err)
	}
	return splitMarked(out.String(), t.Name)
}

func splitMarked(s, name string) ([]piece, error) {
	var pieces []piece
	var generated, plain bool
	start, turn := 0, -1
	emit := func(end int) {
		if end > start {
			pieces = append(pieces, piece{text: s[start:end], plain: plain, generated: generated, turn: turn})
		}
	}
	for i, r := range s {
		var err error
		switch r {
		case markGenBegin, markGenEnd:
			if generated == (r == markGenBegin) || plain {
				err = errors.New("gen_begin and gen_end must alternate outside text")
			}
			emit(i)
			generated = r == markGenBegin
			if generated {
				turn++
			}
		case markTextBegin, markTextEnd:
			if plain == (r == markTextBegin) {
				err = errors.New("unbalanced text markers")
			}
			emit(i)
			plain = r == markTextBegin
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("chat template %s: %w", name, err)
		}
		start = i + len(string(r))
	}
	if generated {
		return nil, fmt.Errorf("chat template %s: gen_begin without gen_end", name)
	}
	emit(len(s))
	return pieces, nil
}
