package config

import (
	"slices"
	"strings"
)

// Checks used by the sections' Validate methods. Each error names the key and what it allows.

func atLeast[T int | int64 | float64](key string, v, lo T) error {
	if v < lo {
		return keyErrorf(key, "must be ≥ %v, got %v", lo, v)
	}
	return nil
}

func between[T int | int64 | float64](key string, v, lo, hi T) error {
	if v < lo || v > hi {
		return keyErrorf(key, "must be in [%v, %v], got %v", lo, hi, v)
	}
	return nil
}

func oneOf(key, v string, allowed ...string) error {
	if !slices.Contains(allowed, v) {
		return keyErrorf(key, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
	}
	return nil
}

// firstError returns the first non-nil error.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
