package config

import (
	"errors"
	"fmt"
	"os"
)

// KeyError is a validation error of one key: Validate returns one so that the caller can say
// where the bad value came from (Locate adds the file and line).
type KeyError struct {
	Key string // "exec.memory_mb", "rl.stages.1.name"
	Msg string // what the key allows and what it got
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Msg }

func keyErrorf(key, format string, args ...any) error {
	return &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Locate prefixes err with "path:LINE: " when err is a KeyError whose key (or the table holding
// it) is set on that line of the TOML file at path and no later override — a --set key or a
// global flag, listed in overridden — replaced it. Other errors come back unchanged.
func Locate(err error, path string, overridden []string) error {
	var ke *KeyError
	if path == "" || !errors.As(err, &ke) {
		return err
	}
	renamed := RenamedKeys()
	for _, k := range overridden {
		if k == ke.Key || renamed[k] == ke.Key {
			return err
		}
	}
	raw, rerr := os.ReadFile(path)
	if rerr != nil {
		return err
	}
	ls := keyLines(raw)
	key := ke.Key
	for old, new := range renamed {
		if _, given := ls[old]; given && new == ke.Key {
			key = old // the file gives the key under its old name
		}
	}
	line := ls.lineOf(key)
	if line == 0 {
		return err
	}
	return &locatedError{msg: fmt.Sprintf("%s:%d: %s", path, line, err.Error()), err: err}
}

// locatedError keeps the wrapped error (a user error stays one) under the new message.
type locatedError struct {
	msg string
	err error
}

func (e *locatedError) Error() string { return e.msg }
func (e *locatedError) Unwrap() error { return e.err }
