package cmd

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
)

// isPathMistake reports whether err comes from a path the user gave that does not exist, is of
// the wrong kind (a file for a directory or the reverse) or may not be read or written: the
// user's to fix, so exit status 1, not an internal error.
func isPathMistake(err error) bool {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return false
	}
	for _, e := range []error{fs.ErrNotExist, fs.ErrPermission, fs.ErrExist, syscall.ENOTDIR, syscall.EISDIR, syscall.ENAMETOOLONG} {
		if errors.Is(pe.Err, e) {
			return true
		}
	}
	return false
}

// errOutOfMemory marks an allocation the machine refused (see allocGuard).
var errOutOfMemory = errors.New("out of memory")

func isOutOfMemory(err error) bool { return errors.Is(err, errOutOfMemory) }

// errorLine is err's message as one line, without a "gorstar: " the message already carries
// (main adds its own).
func errorLine(err error) string {
	msg := strings.TrimSpace(err.Error())
	for strings.HasPrefix(msg, "gorstar: ") {
		msg = strings.TrimPrefix(msg, "gorstar: ")
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " ")), " ")
}
