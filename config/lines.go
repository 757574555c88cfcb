package config

import (
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// lines maps each key path a TOML document sets — "exec.memory_mb", "rl.stages.1.name" for the
// second [[rl.stages]] table — to the line (from 1) where it is set. Tables map to their header.
type lines map[string]int

// keyLines indexes a document; on a syntax error it returns what it read before it.
func keyLines(raw []byte) lines {
	out := lines{}
	walkExpressions(raw, func(x expression) {
		if _, ok := out[x.key]; !ok {
			out[x.key] = x.line
		}
		if x.array != "" {
			if _, ok := out[x.array]; !ok {
				out[x.array] = x.line
			}
		}
		if x.value != nil {
			out.addValue(x.key, x.value, x.line)
		}
	})
	return out
}

// expression is one top-level line of a document: a table header or a key = value.
type expression struct {
	key   string         // full path: "exec.memory_mb", "rl.stages.1" for the second [[rl.stages]]
	array string         // for an array table header, the array's path ("rl.stages")
	line  int            // where it starts, from 1
	value *unstable.Node // nil for a header
}

func walkExpressions(raw []byte, visit func(expression)) {
	var p unstable.Parser
	p.Reset(raw)
	arrays := map[string]int{} // [[name]] tables seen so far, by name
	table := ""
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind != unstable.Table && e.Kind != unstable.ArrayTable && e.Kind != unstable.KeyValue {
			continue
		}
		name, first := keyPath(e.Key())
		if first == nil {
			continue
		}
		x := expression{line: p.Shape(first.Raw).Start.Line}
		switch e.Kind {
		case unstable.Table:
			table = name
			x.key = name
		case unstable.ArrayTable:
			table = name + "." + strconv.Itoa(arrays[name])
			arrays[name]++
			x.key, x.array = table, name
		case unstable.KeyValue:
			x.key, x.value = join(table, name), e.Value()
		}
		visit(x)
	}
}

// failingKey finds the key = value whose decoding fails with an error that carries no position
// (go-toml gives none for a text value type fed a number): it decodes ever longer prefixes of the
// document, each ending before the next expression, and returns the first one that fails.
func failingKey(raw []byte, decode func([]byte) error) (key string, line int) {
	var xs []expression
	walkExpressions(raw, func(x expression) { xs = append(xs, x) })
	starts := lineStarts(raw)
	for i, x := range xs {
		if x.value == nil {
			continue
		}
		end := len(raw)
		if i+1 < len(xs) && xs[i+1].line-1 < len(starts) {
			end = starts[xs[i+1].line-1]
		}
		if decode(raw[:end]) != nil {
			return x.key, x.line
		}
	}
	return "", 0
}

// lineStarts returns the byte offset of each line's start.
func lineStarts(raw []byte) []int {
	starts := []int{0}
	for i, b := range raw {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// addValue records the keys inside an inline table or an array of inline tables, all on the line
// of the key that holds them unless they carry their own position.
func (l lines) addValue(prefix string, v *unstable.Node, line int) {
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			name, _ := keyPath(kv.Key())
			full := join(prefix, name)
			if _, ok := l[full]; !ok {
				l[full] = line
			}
			l.addValue(full, kv.Value(), line)
		}
	case unstable.Array:
		it := v.Children()
		for i := 0; it.Next(); i++ {
			full := prefix + "." + strconv.Itoa(i)
			l[full] = line
			l.addValue(full, it.Node(), line)
		}
	}
}

// lineOf returns the line of key, else of the nearest table or key above it below the section
// ("rl.stages.1" for "rl.stages.1.steps", never "rl"), else 0.
func (l lines) lineOf(key string) int {
	for k := key; strings.Contains(k, "."); k = k[:strings.LastIndexByte(k, '.')] {
		if line, ok := l[k]; ok {
			return line
		}
	}
	return 0
}

func keyPath(it unstable.Iterator) (string, *unstable.Node) {
	var parts []string
	var first *unstable.Node
	for it.Next() {
		if first == nil {
			first = it.Node()
		}
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, "."), first
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}
