// Package config is the schema of gorstar's TOML configuration: one struct per section, the
// defaults in one place (Default), strict decoding that names the file, line and key of every
// mistake, `--set key.path=value` overrides typed by the schema, and validation.
//
// The command line resolves Default ← file ← --set ← explicit global flags, validates, and passes
// the sections down. Who may import this package:
//
//   - Stage packages (sft, rl, eval, train, rollout) take their section struct.
//   - Library packages — model, engine, reward, data, chat, tokenizer, kernels, safetensors, serve,
//     pytool — take their own options types and never import config; cmd and the stages translate a
//     section into those options (config.Exec into pytool.Options in internal/tooloptions alone). TestLibrariesDoNotImportConfig enforces this with `go list -deps`.
package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"gorstar/internal/suggest"
	"gorstar/internal/usererr"
)

// Config is the whole pipeline configuration. `gorstar config show` prints it with its comments.
type Config struct {
	Run     Run     `toml:"run" comment:"Run directory, seed and compute device."`
	Data    Data    `toml:"data" comment:"Training and evaluation data."`
	Model   Model   `toml:"model" comment:"The policy model."`
	Exec    Exec    `toml:"exec" comment:"The sandboxed Python tool environment."`
	Reward  Reward  `toml:"reward" comment:"Answer grading."`
	Rollout Rollout `toml:"rollout" comment:"Multi-turn rollouts: format, turns and sampling."`
	SFT     SFT     `toml:"sft" comment:"Non-reasoning supervised warm-up."`
	RL      RL      `toml:"rl" comment:"GRPO-RoC reinforcement learning."`
	Eval    Eval    `toml:"eval" comment:"Evaluation: average pass@1 over k samples."`

	warnings []string // keys given under an old name (Warnings)
}

// Default returns the built-in configuration: the laptop quickstart.
func Default() Config {
	return Config{
		Run:     DefaultRun(),
		Data:    DefaultData(),
		Model:   DefaultModel(),
		Exec:    DefaultExec(),
		Reward:  DefaultReward(),
		Rollout: DefaultRollout(),
		SFT:     DefaultSFT(),
		RL:      DefaultRL(),
		Eval:    DefaultEval(),
	}
}

// Validate checks every section; the error names the first bad key and what it allows.
func (c Config) Validate() error {
	for _, v := range []interface{ Validate() error }{c.Run, c.Data, c.Model, c.Exec, c.Reward, c.Rollout, c.SFT, c.RL, c.Eval} {
		if err := v.Validate(); err != nil {
			return usererr.Wrap(err)
		}
	}
	return nil
}

// Load returns Default() overlaid with the TOML file at path, decoded strictly.
func Load(path string) (Config, error) {
	cfg := Default()
	if path == "" {
		return cfg, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return cfg, usererr.New("config %s: %v", path, unwrapPathError(err))
	}
	if err := Decode(&cfg, path, raw); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// Decode overlays the TOML document raw (named name in messages) on cfg. Unknown keys and values of
// the wrong type are user errors of the form `name:LINE: unknown key "rl.lrr" (did you mean "rl.lr"?)`.
func Decode(cfg *Config, name string, raw []byte) error {
	err := strictDecode(cfg, raw)
	if err == nil {
		ls := keyLines(raw)
		cfg.dropShadowed(name, ls)
		cfg.moveRenamed(func(old string) string { return fmt.Sprintf("%s:%d", name, ls.lineOf(old)) })
		return nil
	}
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		e := strict.Errors[0]
		row, _ := e.Position()
		key := strings.Join(e.Key(), ".")
		msg := fmt.Sprintf("%s:%d: unknown key %q", name, row, key)
		if s := suggestKey(reflect.TypeOf(*cfg), e.Key()); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return usererr.New("%s", msg)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		key := strings.Join(de.Key(), ".")
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		if m := typeMismatch.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("expected %s, got a %s", goTypeWord(m[2]), m[1])
		}
		if key != "" {
			return usererr.New("%s:%d: %s: %s", name, row, key, msg)
		}
		return usererr.New("%s:%d: %s", name, row, msg)
	}
	if key, line := failingKey(raw, func(prefix []byte) error { c := Default(); return strictDecode(&c, prefix) }); line > 0 {
		return usererr.New("%s:%d: %s: %v", name, line, key, err)
	}
	return usererr.New("%s: %v", name, err)
}

func strictDecode(cfg *Config, raw []byte) error {
	dec := toml.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(cfg)
}

// TOML renders cfg as a commented TOML document.
func (c Config) TOML() ([]byte, error) {
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	enc.SetIndentTables(false)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return buf.Bytes(), nil
}

// SHA256 fingerprints the settings: the SHA-256 of the TOML document without its comments and
// blank lines, so that rewording a key's comment keeps it and changing a value or a key's name
// does not. A run records it (train's summary.json) to say which settings it ran.
func (c Config) SHA256() (string, error) {
	doc, err := c.TOML()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, line := range strings.Split(string(doc), "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		h.Write([]byte(line + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Keys lists every settable key path of the schema ("rl.stages.max_turns" for fields of array
// elements), sorted; used for suggestions and documentation.
func Keys() []string {
	var keys []string
	collectKeys(reflect.TypeOf(Config{}), "", &keys)
	sort.Strings(keys)
	return keys
}

func collectKeys(t reflect.Type, prefix string, out *[]string) {
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || isLeafStruct(t) {
		*out = append(*out, prefix)
		return
	}
	for i := 0; i < t.NumField(); i++ {
		name, ok := tomlName(t.Field(i))
		if !ok || isRenamed(t.Field(i)) {
			continue
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		collectKeys(t.Field(i).Type, p, out)
	}
}

// suggestKey finds the valid key closest to the unknown one among its siblings.
func suggestKey(root reflect.Type, path []string) string {
	t := root
	for _, part := range path[:len(path)-1] {
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return ""
		}
		f, ok := fieldByTOMLName(t, part)
		if !ok {
			return ""
		}
		t = f.Type
	}
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return ""
	}
	bad := path[len(path)-1]
	best, bestDist, renamedTo := "", 1<<30, ""
	for i := 0; i < t.NumField(); i++ {
		name, ok := tomlName(t.Field(i))
		if !ok {
			continue
		}
		if d := suggest.Distance(bad, name); d < bestDist {
			best, bestDist, renamedTo = name, d, t.Field(i).Tag.Get("renamed")
		}
	}
	if best == "" || !suggest.Near(bad, bestDist) {
		return ""
	}
	if renamedTo != "" { // close to an old name: suggest the new one
		return renamedTo
	}
	return strings.Join(append(append([]string{}, path[:len(path)-1]...), best), ".")
}

func tomlName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("toml")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, true
}

func fieldByTOMLName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if n, ok := tomlName(t.Field(i)); ok && n == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

var typeMismatch = regexp.MustCompile(`cannot decode TOML (\w+) into struct field \S+ of type (\S+)`)

func goTypeWord(t string) string {
	switch {
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	}
	return "a " + t
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
