package cmd

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// globalUse has an entry for every command of the tree that runs something, and none besides.
func TestGlobalUseCoversTheCommandTree(t *testing.T) {
	var paths []string
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			path := strings.TrimSpace(prefix + " " + c.Name)
			if c.Action != nil && c.Name != "help" {
				paths = append(paths, path)
			}
			walk(path, c.Subcommands)
		}
	}
	walk("", newApp().Commands)
	slices.Sort(paths)
	listed := slices.Sorted(maps.Keys(globalUse))
	for _, p := range paths {
		if _, ok := globalUse[p]; !ok {
			t.Errorf("command %q has no globalUse entry: list the global flags it acts on", p)
		}
	}
	for _, p := range listed {
		if !slices.Contains(paths, p) {
			t.Errorf("globalUse lists %q, which is not a command", p)
		}
	}
	for p, uses := range globalUse {
		for _, u := range uses {
			if !slices.Contains(checkedGlobals, u) {
				t.Errorf("globalUse[%q] names %q, not a checked global flag", p, u)
			}
		}
	}
}

// A global flag a command does not act on is refused, naming the commands that do.
func TestCheckGlobalUse(t *testing.T) {
	if err := checkGlobalUse("model convert", []string{"device", "threads", "json"}); err != nil {
		t.Errorf("flags it acts on: %v", err)
	}
	err := checkGlobalUse("model convert", []string{"seed"})
	if err == nil || !strings.HasPrefix(err.Error(), "model convert: --seed does nothing here (it applies to ") ||
		!strings.Contains(err.Error(), "model init") || strings.Contains(err.Error(), "model convert,") {
		t.Errorf("--seed to model convert: %v", err)
	}
	if err := checkGlobalUse("data import", []string{"run-dir"}); err == nil || !strings.HasSuffix(err.Error(), "the training and evaluation commands)") {
		t.Errorf("--run-dir: %v", err)
	}
}
