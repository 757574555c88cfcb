package cmd

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"gorstar/internal/usererr"
)

// checkModelDir says plainly what is wrong with a model directory flag before a loader talks
// about one of the files inside it.
func checkModelDir(flag, dir string) error {
	st, err := os.Stat(dir)
	switch {
	case os.IsNotExist(err):
		return usererr.New("%s %s: no such directory", flag, dir)
	case err != nil:
		return usererr.New("%s %s: %v", flag, dir, err)
	case !st.IsDir():
		return usererr.New("%s %s: is a file; give the model directory (%s)", flag, dir, filepath.Dir(dir))
	}
	return nil
}

// argOrFlag returns the one positional argument, or the flag's value when the flag is given
// instead (both spellings work: `model info DIR` and `model info --model DIR`).
func argOrFlag(c *cli.Context, flag, what string) (string, error) {
	if c.IsSet(flag) {
		if c.NArg() > 0 {
			return "", usererr.New("%s: give the %s as --%s or as an argument, not both",
				strings.TrimPrefix(commandPath(c), "gorstar "), what, flag)
		}
		return c.String(flag), nil
	}
	return oneArg(c, what)
}
