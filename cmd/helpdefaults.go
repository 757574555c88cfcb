package cmd

import (
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// defaultInWords finds a default a flag's usage gives in words: "(default data.synth.train)",
// "(default: run.dir/run.name)" or "(overrides run.seed)".
var defaultInWords = regexp.MustCompile(`\s*\((?:default:? |overrides )([^()]*(?:\([^()]*\))?[^()]*)\)`)

// showRealDefaults makes help print each flag's real default once: urfave appends the Go zero
// value, "(default: 0)", to a flag whose default comes from the configuration and is given in
// words, so the words become the flag's default text instead.
func showRealDefaults(cmds []*cli.Command, flags []cli.Flag) {
	for _, f := range flags {
		setDefaultText(f)
	}
	for _, c := range cmds {
		showRealDefaults(c.Subcommands, c.Flags)
	}
}

func setDefaultText(f cli.Flag) {
	var usage, text *string
	switch f := f.(type) {
	case *cli.IntFlag:
		usage, text = &f.Usage, &f.DefaultText
	case *cli.Int64Flag:
		usage, text = &f.Usage, &f.DefaultText
	case *cli.Float64Flag:
		usage, text = &f.Usage, &f.DefaultText
	case *cli.StringFlag:
		usage, text = &f.Usage, &f.DefaultText
	case *cli.DurationFlag:
		usage, text = &f.Usage, &f.DefaultText
	default:
		return
	}
	m := defaultInWords.FindStringSubmatchIndex(*usage)
	if m == nil || *text != "" {
		return
	}
	words := (*usage)[m[2]:m[3]]
	*usage = strings.TrimSpace((*usage)[:m[0]] + (*usage)[m[1]:])
	*text = words
}
