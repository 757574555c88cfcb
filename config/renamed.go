package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// A key that changed its name keeps its old one for one release. The old name is a field of the
// section that held it: a pointer, tagged omitempty and `renamed:"NEW.KEY"`, so that strict
// decoding and --set still take it while `config show`, Keys and suggestions leave it out.
// Decode and Set move its value onto the new key at once and note a warning; the command line
// prints the warnings (Warnings) once.

// Warnings lists the deprecation notes of the keys given under an old name, each once, in the
// order they were met: "FILE:LINE: exec.tool_text_chars is deprecated; use rollout.tool_text_chars".
func (c Config) Warnings() []string { return c.warnings }

// RenamedKeys maps each old key name that still decodes to its new name.
func RenamedKeys() map[string]string {
	out := map[string]string{}
	walkRenamed(reflect.ValueOf(&Config{}).Elem(), "", func(old, new string, _ reflect.Value) { out[old] = new })
	return out
}

// walkRenamed calls visit for each old-name field below v (a struct; array elements are not
// searched), with its key path, its new key and the field.
func walkRenamed(v reflect.Value, prefix string, visit func(old, new string, f reflect.Value)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name, ok := tomlName(t.Field(i))
		if !ok {
			continue
		}
		key := join(prefix, name)
		if to := t.Field(i).Tag.Get("renamed"); to != "" {
			visit(key, to, v.Field(i))
			continue
		}
		if f := v.Field(i); f.Kind() == reflect.Struct && !isLeafStruct(f.Type()) {
			walkRenamed(f, key, visit)
		}
	}
}

// moveRenamed moves the values given under old names onto their new keys, noting a warning for
// each; where(old) says where the old name was given ("FILE:LINE", "--set").
func (c *Config) moveRenamed(where func(old string) string) {
	walkRenamed(reflect.ValueOf(c).Elem(), "", func(old, new string, f reflect.Value) {
		if f.IsNil() {
			return
		}
		dst, ok := c.field(new)
		if !ok || dst.Type() != f.Type().Elem() {
			panic(fmt.Sprintf("config: %s is renamed to %s, which is not a %s key", old, new, f.Type().Elem()))
		}
		dst.Set(f.Elem())
		f.SetZero()
		note := fmt.Sprintf("%s: %s is deprecated; use %s", where(old), old, new)
		if !slices.Contains(c.warnings, note) {
			c.warnings = append(c.warnings, note)
		}
	})
}

// field returns the field at a key path of table names (no array indexes).
func (c *Config) field(key string) (reflect.Value, bool) {
	v := reflect.ValueOf(c).Elem()
	for _, part := range strings.Split(key, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		f, ok := fieldByTOMLName(v.Type(), part)
		if !ok {
			return reflect.Value{}, false
		}
		v = v.FieldByIndex(f.Index)
	}
	return v, true
}

// dropShadowed clears the old names a document sets beside their new ones: the new key holds (a
// file written by an older `config show` has both, exec.tool_text_chars and rollout.tool_text_chars,
// and the latter was the cut the model saw), and a warning says the old one is ignored.
func (c *Config) dropShadowed(name string, ls lines) {
	walkRenamed(reflect.ValueOf(c).Elem(), "", func(old, new string, f reflect.Value) {
		lo, hasOld := ls[old]
		ln, hasNew := ls[new]
		if f.IsNil() || !hasOld || !hasNew {
			return
		}
		f.SetZero()
		c.warnings = append(c.warnings, fmt.Sprintf("%s:%d: %s is deprecated and ignored: %s (line %d) is set", name, lo, old, new, ln))
	})
}

// isRenamed reports an old-name field.
func isRenamed(f reflect.StructField) bool { return f.Tag.Get("renamed") != "" }
