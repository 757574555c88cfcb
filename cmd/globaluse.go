package cmd

import (
	"slices"
	"strings"

	"gorstar/internal/usererr"
)

// The global flags --run-dir, --seed, --device and --threads are accepted by every command, but
// not every command has a use for each. globalUse lists, for every command that runs something,
// the ones it acts on; given to it, any other of them is refused rather than silently ignored.
// TestGlobalUseCoversTheCommandTree holds the table to the command tree: a command added without
// an entry, or an entry left for a command gone, fails it. --run-dir is the run directory of the
// training and evaluation commands.
var globalUse = map[string][]string{
	"train":          checkedGlobals,
	"sft":            checkedGlobals,
	"sft bench":      {"seed", "device", "threads"},
	"rl":             checkedGlobals,
	"eval":           checkedGlobals,
	"rollout":        checkedGlobals,
	"rollout bench":  {"seed", "device", "threads"},
	"report":         checkedGlobals,
	"data import":    {},
	"data synth":     {"seed"},
	"data stats":     {},
	"data filter":    {"seed", "device", "threads"}, // with --max-pass-rate
	"data split":     {"seed"},
	"data export":    {},
	"exec run":       {},
	"exec serve":     {},
	"exec bench":     {},
	"reward grade":   {"threads"},
	"model init":     {"seed", "device", "threads"},
	"model info":     {},
	"model convert":  {"device", "threads"},
	"model logprobs": {"device", "threads"},
	"model bench":    {"seed", "device", "threads"},
	"model tokenize": {},
	"serve":          {"seed", "device", "threads"},
	"chat":           {"seed", "device", "threads"},
	"config show":    {"run-dir", "seed", "device", "threads"},
	"config check":   {"run-dir", "seed", "device", "threads"},
	"config keys":    {"run-dir", "seed", "device", "threads"},
	"doctor":         {},
	"gpu-probe":      {},
}

// checkedGlobals are the global flags globalUse speaks for.
var checkedGlobals = []string{"run-dir", "seed", "device", "threads"}

// checkGlobalUse refuses a global flag given to a command that does nothing with it.
func checkGlobalUse(path string, given []string) error {
	uses := globalUse[path]
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
		if slices.Contains(uses, name) && !strings.HasPrefix(cmd, "config") && !slices.Equal(uses, checkedGlobals) {
			cmds = append(cmds, cmd)
		}
	}
	slices.Sort(cmds)
	if name == "run-dir" {
		cmds = append(cmds, "the training and evaluation commands")
	}
	return cmds
}
