// Package outpath checks where a command is about to write before it starts, so that no command
// loses data by accident: an output may not be one of the command's inputs, a file may not be
// written where a directory is (or a directory where a file is), and a directory the command did
// not create is replaced only when the user says --force. The errors are user errors naming the
// flag and the path.
package outpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gorstar/internal/usererr"
)

// Stdio is the path that means standard input or output; it is never checked.
const Stdio = "-"

// File checks that flag's value out may be written as a plain file (an existing file is replaced
// atomically as usual): it is not a directory and not the same file as any of inputs.
func File(flag, out string, inputs ...string) error {
	if out == Stdio {
		return nil
	}
	if out == "" {
		return usererr.New("%s: empty path", flag)
	}
	if err := notAnInput(flag, out, inputs); err != nil {
		return err
	}
	if err := parentIsDir(flag, out); err != nil {
		return err
	}
	st, err := os.Stat(out)
	switch {
	case err == nil && st.IsDir():
		return usererr.New("%s %s: is a directory; give a file name", flag, out)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return usererr.New("%s %s: %v", flag, out, unwrap(err))
	}
	return nil
}

// Dir checks that flag's value out may be (re)created as a directory. It refuses the current
// directory or one above it, a directory that is one of inputs or holds one, and, unless force,
// an existing file or a non-empty directory.
func Dir(flag, out string, force bool, inputs ...string) error {
	if out == "" {
		return usererr.New("%s: empty path", flag)
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return usererr.New("%s %s: %v", flag, out, err)
	}
	if wd, err := os.Getwd(); err == nil && within(wd, abs) {
		return usererr.New("%s %s: is the current directory or one above it; give a new directory", flag, out)
	}
	for _, in := range inputs {
		if in == "" || in == Stdio {
			continue
		}
		if inAbs, err := filepath.Abs(in); err == nil && within(inAbs, abs) {
			return usererr.New("%s %s: holds the input %s; give another directory", flag, out, in)
		}
	}
	if err := parentIsDir(flag, out); err != nil {
		return err
	}
	st, err := os.Stat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return usererr.New("%s %s: %v", flag, out, unwrap(err))
	case force:
		return nil
	case !st.IsDir():
		return usererr.New("%s %s: is a file, not a directory (pass --force to replace it)", flag, out)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return usererr.New("%s %s: %v", flag, out, unwrap(err))
	}
	if len(entries) > 0 {
		return usererr.New("%s %s: already exists and is not empty (pass --force to replace it)", flag, out)
	}
	return nil
}

// notAnInput refuses out when it names the same file as one of inputs (also through links).
func notAnInput(flag, out string, inputs []string) error {
	outSt, outErr := os.Stat(out)
	outAbs, _ := filepath.Abs(out)
	for _, in := range inputs {
		if in == "" || in == Stdio {
			continue
		}
		inAbs, _ := filepath.Abs(in)
		same := inAbs == outAbs
		if inSt, err := os.Stat(in); err == nil && outErr == nil {
			same = same || os.SameFile(inSt, outSt)
		}
		if same {
			return usererr.New("%s %s: is also an input; write to another file", flag, out)
		}
	}
	return nil
}

// parentIsDir refuses a path whose parent exists as something other than a directory.
func parentIsDir(flag, out string) error {
	for dir := filepath.Dir(out); ; dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				return usererr.New("%s %s: %s is a file, not a directory", flag, out, dir)
			}
			return nil
		}
		if parent := filepath.Dir(dir); parent == dir {
			return nil
		}
	}
}

// within reports whether path is dir or lies below it (both absolute and clean).
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
