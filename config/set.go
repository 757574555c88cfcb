package config

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"gorstar/internal/usererr"
)

// Set applies one `key.path=value` override. The value is typed by the schema: it is read as a
// TOML value of the field's type (`rl.lr=1e-6`, `exec.modules=["math","sympy"]`); for a string
// field an unquoted value is taken literally. Array elements are addressed by index
// (`rl.stages.1.max_turns=15`); the index one past the end appends a copy of the last element.
func (c *Config) Set(assignment string) error {
	key, value, ok := strings.Cut(assignment, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return usererr.New("--set %q: expected key.path=value", assignment)
	}
	path := strings.Split(key, ".")
	v := reflect.ValueOf(c).Elem()
	for i, part := range path {
		switch v.Kind() {
		case reflect.Struct:
			if isLeafStruct(v.Type()) {
				return usererr.New("--set %s: %q is a value, not a table", key, strings.Join(path[:i], "."))
			}
			f, found := fieldByTOMLName(v.Type(), part)
			if !found {
				msg := fmt.Sprintf("--set %s: unknown key %q", key, strings.Join(path[:i+1], "."))
				if s := suggestKey(reflect.TypeOf(*c), stripIndexes(path[:i+1])); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
				return usererr.New("%s", msg)
			}
			v = v.FieldByIndex(f.Index)
		case reflect.Slice:
			n, err := strconv.Atoi(part)
			if err != nil || n < 0 || n > v.Len() || (n == v.Len() && v.Len() == 0) {
				return usererr.New("--set %s: %q needs an index 0..%d (or %d to append a copy of the last)",
					key, strings.Join(path[:i], "."), max(v.Len()-1, 0), v.Len())
			}
			if n == v.Len() {
				v.Set(reflect.Append(v, v.Index(n-1)))
				renameCopy(v.Index(n), n)
			}
			v = v.Index(n)
		default:
			return usererr.New("--set %s: %q is a value, not a table", key, strings.Join(path[:i], "."))
		}
	}
	if err := setValue(v, value); err != nil {
		return usererr.New("--set %s: %v", key, err)
	}
	c.moveRenamed(func(string) string { return "--set" })
	return nil
}

// setValue decodes text as a TOML value of v's type.
func setValue(v reflect.Value, text string) error {
	text = strings.TrimSpace(text)
	holder := reflect.New(reflect.StructOf([]reflect.StructField{{
		Name: "V", Type: v.Type(), Tag: `toml:"v"`,
	}}))
	err := toml.Unmarshal([]byte("v = "+text), holder.Interface())
	if err != nil && (v.Kind() == reflect.String || isTextField(v)) {
		err = toml.Unmarshal([]byte("v = "+strconv.Quote(text)), holder.Interface())
	}
	if err != nil && v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String {
		// A bare comma list, `exec.modules=math,sympy`, is the list of its items.
		var items []string
		for _, s := range strings.Split(text, ",") {
			items = append(items, strconv.Quote(strings.TrimSpace(s)))
		}
		err = toml.Unmarshal([]byte("v = ["+strings.Join(items, ", ")+"]"), holder.Interface())
	}
	if err != nil {
		return fmt.Errorf("want %s, got %q", withArticle(typeName(v.Type())), text)
	}
	v.Set(holder.Elem().Field(0))
	return nil
}

// withArticle puts "a" or "an" before a type word.
func withArticle(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

// renameCopy gives an appended copy of a named element (a stage) its own name, stage<N+1>, so
// it does not repeat the name of the element it copies.
func renameCopy(v reflect.Value, n int) {
	if v.Kind() != reflect.Struct {
		return
	}
	if f := v.FieldByName("Name"); f.IsValid() && f.Kind() == reflect.String && f.CanSet() {
		f.SetString(fmt.Sprintf("stage%d", n+1))
	}
}

func isTextField(v reflect.Value) bool {
	_, ok := v.Addr().Interface().(encoding.TextUnmarshaler)
	return ok
}

// isLeafStruct reports structs that are single TOML values (Duration), not tables.
func isLeafStruct(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem())
}

func typeName(t reflect.Type) string {
	switch {
	case reflect.PointerTo(t).Implements(reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()):
		return strings.ToLower(t.Name())
	case t.Kind() == reflect.Slice:
		return "list of " + typeName(t.Elem())
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "number"
	}
	return t.Kind().String()
}

func stripIndexes(path []string) []string {
	var out []string
	for _, p := range path {
		if _, err := strconv.Atoi(p); err != nil {
			out = append(out, p)
		}
	}
	return out
}
