package cmd

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"gorstar/internal/usererr"
)

// A flag that changed its name keeps its old spelling for one release: a hidden flag of the same
// type (renamed builds it) whose value resolveRenamed moves onto the flag's new name before the
// command runs, with one warning line on stderr. Handlers read only the new name.

// renamedFlag is the old spelling of the flag now called canonical. It stays out of help.
type renamedFlag struct {
	cli.Flag
	canonical string
}

func (f *renamedFlag) IsVisible() bool { return false }

// TakesValue lets normalizeArgs know whether the old spelling reads the next word.
func (f *renamedFlag) TakesValue() bool {
	if v, ok := f.Flag.(interface{ TakesValue() bool }); ok {
		return v.TakesValue()
	}
	return true
}

// renamed returns the hidden old spelling old of flag f, which keeps f's type.
func renamed(old string, f cli.Flag) cli.Flag {
	var hidden cli.Flag
	switch f.(type) {
	case *cli.BoolFlag:
		hidden = &cli.BoolFlag{Name: old, Hidden: true}
	case *cli.IntFlag:
		hidden = &cli.IntFlag{Name: old, Hidden: true}
	case *cli.Int64Flag:
		hidden = &cli.Int64Flag{Name: old, Hidden: true}
	case *cli.Float64Flag:
		hidden = &cli.Float64Flag{Name: old, Hidden: true}
	case *cli.StringFlag:
		hidden = &cli.StringFlag{Name: old, Hidden: true}
	case *cli.StringSliceFlag:
		hidden = &cli.StringSliceFlag{Name: old, Hidden: true}
	case *cli.DurationFlag:
		hidden = &cli.DurationFlag{Name: old, Hidden: true}
	default:
		panic(fmt.Sprintf("renamed(%q): flag type %T not handled", old, f))
	}
	return &renamedFlag{Flag: hidden, canonical: f.Names()[0]}
}

// withRenamed returns flags with the old spelling of each flag named in olds (canonical → old
// names) appended.
func withRenamed(flags []cli.Flag, olds map[string][]string) []cli.Flag {
	out := flags
	for _, f := range flags {
		for _, old := range olds[f.Names()[0]] {
			out = append(out, renamed(old, f))
		}
	}
	return out
}

// resolveRenamed makes every command of the tree that has old spellings move their values onto
// the new names before it runs (its Before hook, ahead of any it had).
func resolveRenamed(cmds []*cli.Command) {
	for _, cmd := range cmds {
		var olds []*renamedFlag
		for _, f := range cmd.Flags {
			if r, ok := f.(*renamedFlag); ok {
				olds = append(olds, r)
			}
		}
		if len(olds) > 0 {
			before := cmd.Before
			cmd.Before = func(c *cli.Context) error {
				if err := applyRenamed(c, olds); err != nil {
					return err
				}
				if before != nil {
					return before(c)
				}
				return nil
			}
		}
		resolveRenamed(cmd.Subcommands)
	}
}

// applyRenamed moves the values of the old spellings given on the command line onto their new
// names, warning once per spelling. Both spellings together are a user error.
func applyRenamed(c *cli.Context, olds []*renamedFlag) error {
	for _, r := range olds {
		old := r.Names()[0]
		if !c.IsSet(old) {
			continue
		}
		if c.IsSet(r.canonical) {
			return usererr.New("%s: --%s and --%s are one flag; give only --%s", strings.TrimPrefix(commandPath(c), "gorstar "), old, r.canonical, r.canonical)
		}
		fmt.Fprintf(c.App.ErrWriter, "gorstar: warning: --%s is deprecated; use --%s\n", old, r.canonical)
		var values []string
		if _, ok := r.Flag.(*cli.StringSliceFlag); ok {
			values = c.StringSlice(old)
		} else {
			values = []string{fmt.Sprint(c.Value(old))}
		}
		for _, v := range values {
			if err := c.Set(r.canonical, v); err != nil {
				return usererr.New("%s: --%s %s: %v", strings.TrimPrefix(commandPath(c), "gorstar "), old, v, err)
			}
		}
	}
	return nil
}
