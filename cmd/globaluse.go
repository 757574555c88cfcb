package cmd

import (
	"slices"
	"strings"

	"gorstar/internal/usererr"
)

// The global flags --run-dir, --seed, --device and --threads are accepted by every command, but
// not every command has a use for each. globalUse lists, for the commands of this file's time,
// the ones they act on; given to any other of them, such a flag is refused rather than silently
// ignored. A command missing from the table (a newer one) accepts them all. --run-dir is the run
// directory of the training and evaluation commands; none of the commands below writes a run.
var globalUse = map[string][]string{
	"config show":    {"run-dir", "seed", "device", "threads"},
	"config check":   {"run-dir", "seed", "device", "threads"},
	"model init":     {"seed", "device", "threads"},
	"model info":     {},
	"model logprobs": {"device", "threads"},
	"model bench":    {"seed", "device", "threads"},
	"model tokenize": {},
	"exec run":       {},
	"exec serve":     {},
	"exec bench":     {},
	"reward grade":   {"threads"},
	"data import":    {},
	"data synth":     {"seed"},
	"data stats":     {},
	"data filter":    {"seed", "device", "threads"}, // with --max-pass-rate
	"data split":     {"seed"},
	"data export":    {},
	"serve":          {"seed", "device", "threads"},
	"chat":           {"seed", "device", "threads"},
}

// checkedGlobals are the global flags globalUse speaks for.
var checkedGlobals = []string{"run-dir", "seed", "device", "threads"}

// checkGlobalUse refuses a global flag given to a command that does nothing with it.
func checkGlobalUse(path string, given []string) error {
	uses, known := globalUse[path]
	if !known {
		return nil
	}
	for _, name := range given {
		if slices.Contains(checkedGlobals, name) && !slices.Contains(uses, name) {
			return usererr.New("%s: --%s does nothing here (it applies to %s)", path, name, strings.Join(usersOf(name), ", "))
		}
	}
	return nil
}

// usersOf lists the commands that act on a global flag.
func usersOf(name string) []string {
	var cmds []string
	for cmd, uses := range globalUse {
		if slices.Contains(uses, name) && !strings.HasPrefix(cmd, "config") {
			cmds = append(cmds, cmd)
		}
	}
	slices.Sort(cmds)
	if name == "run-dir" {
		cmds = append(cmds, "the training and evaluation commands")
	}
	return cmds
}
