package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"gorstar/internal/suggest"
	"gorstar/internal/usererr"
)

// normalizeArgs prepares a command line for urfave/cli, which stops reading flags at a command's
// first positional argument. It walks the command tree as the user typed it and returns the
// same words with every command's flags moved before its positional arguments, so
// `gorstar data stats FILE --json` means `gorstar data stats --json FILE`. On the way it catches
// what urfave reports badly: an unknown command (it would print "No help topic") and a missing
// required flag (it would print the whole help on stdout). Words after "--" stay positional.
func normalizeArgs(app *cli.App, args []string) ([]string, error) {
	if len(args) == 0 {
		return args, nil
	}
	out := []string{args[0]}
	flags, cmds := app.Flags, app.Commands
	var leaf *cli.Command
	var leafFlags, positional, given []string
	path := ""
	dashes := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case dashes:
			positional = append(positional, a)
		case a == "--":
			dashes = true
		case len(a) > 1 && a[0] == '-':
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			given = append(given, name)
			words := []string{a}
			if takesValue(flags, a) && !strings.Contains(a, "=") && i+1 < len(args) {
				i++
				words = append(words, args[i])
			}
			if leaf != nil {
				leafFlags = append(leafFlags, words...)
			} else {
				out = append(out, words...)
			}
		case leaf != nil:
			positional = append(positional, a)
		case a == "help" || a == "h":
			return append(out, args[i:]...), nil // help's own syntax: `gorstar help data`
		default:
			cmd := findCommand(cmds, a)
			if cmd == nil {
				return nil, unknownCommand(strings.TrimSpace(path+" "+a), a, cmds)
			}
			path = strings.TrimSpace(path + " " + a)
			out = append(out, a)
			flags, cmds = cmd.Flags, cmd.Subcommands
			if len(cmds) == 0 {
				leaf = cmd
			}
		}
	}
	if leaf != nil {
		if err := requiredFlags(leaf, path, leafFlags); err != nil {
			return nil, err
		}
		if err := checkGlobalUse(path, given); err != nil {
			return nil, err
		}
		out = append(out, leafFlags...)
	}
	if dashes || slices.ContainsFunc(positional, func(p string) bool { return len(p) > 1 && p[0] == '-' }) {
		out = append(out, "--")
	}
	return append(out, positional...), nil
}

// takesValue reports whether the flag word (-x, --name or --name=v) names a flag of flags that
// reads the next word as its value. Unknown flags take none: urfave reports them.
func takesValue(flags []cli.Flag, word string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			if v, ok := f.(interface{ TakesValue() bool }); ok {
				return v.TakesValue()
			}
			return true
		}
	}
	return false
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// unknownCommand says which commands exist, suggesting the closest to what was typed.
func unknownCommand(typed, word string, cmds []*cli.Command) error {
	var names []string
	best, bestDist := "", 1<<30
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		names = append(names, c.Name)
		d := suggest.Distance(word, c.Name)
		if strings.HasPrefix(c.Name, word) {
			d = min(d, 1)
		}
		if d < bestDist {
			best, bestDist = c.Name, d
		}
	}
	prefix := strings.TrimSuffix(typed, word)
	msg := fmt.Sprintf("unknown command %q", typed)
	if best != "" && suggest.Near(word, bestDist) {
		msg += fmt.Sprintf("; did you mean %q?", prefix+best)
	}
	return usererr.New("%s (commands: %s; see `gorstar %s--help`)", msg, strings.Join(names, ", "), prefix)
}

// requiredFlags checks the command's required flags among the words given to it. Help asked
// for needs none.
func requiredFlags(cmd *cli.Command, path string, given []string) error {
	names := map[string]bool{}
	for _, w := range given {
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if w != "" && w[0] == '-' {
			names[name] = true
		}
	}
	if names["help"] || names["h"] {
		return nil
	}
	var missing []string
	for _, f := range cmd.Flags {
		r, ok := f.(cli.RequiredFlag)
		if !ok || !r.IsRequired() || slices.ContainsFunc(f.Names(), func(n string) bool { return names[n] }) {
			continue
		}
		missing = append(missing, "--"+f.Names()[0])
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return usererr.New("%s: missing required flag %s (see `gorstar %s --help`)", path, missing[0], path)
	}
	return usererr.New("%s: missing required flags %s (see `gorstar %s --help`)", path, strings.Join(missing, ", "), path)
}
