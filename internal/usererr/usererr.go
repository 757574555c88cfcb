// Package usererr marks errors that the user caused (a bad flag, file, row or config key) so the
// command line can exit with status 1 and one clear line, and tell them apart from internal
// failures (status 2).
package usererr

import (
	"errors"
	"fmt"
)

// Error is an error the user can fix. Its message is the whole line printed on stderr, so it should
// name the file, the line or row, the field and what was expected.
type Error struct {
	msg string
	err error
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.err }

// New returns a user error with a formatted message. A %w verb wraps the cause as fmt.Errorf does.
func New(format string, args ...any) error {
	cause := fmt.Errorf(format, args...)
	return &Error{msg: cause.Error(), err: errors.Unwrap(cause)}
}

// Wrap marks err as the user's fault, keeping its message. It returns nil for a nil err.
func Wrap(err error) error {
	if err == nil || Is(err) {
		return err
	}
	return &Error{msg: err.Error(), err: err}
}

// Is reports whether err or anything it wraps is a user error.
func Is(err error) bool {
	var u *Error
	return errors.As(err, &u)
}
