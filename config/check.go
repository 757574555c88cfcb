package config

import (
	"fmt"
	"slices"
	"strings"
)

// Checks used by the sections' Validate methods. Each error names the key and what it allows.

func atLeast[T int | int64 | float64](key string, v, lo T) error {
	if v < lo {
		return fmt.Errorf("%s: must be ≥ %v, got %v", key, lo, v)
	}
	return nil
}

func between[T int | int64 | float64](key string, v, lo, hi T) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s: must be in [%v, %v], got %v", key, lo, hi, v)
	}
	return nil
}

func oneOf(key, v string, allowed ...string) error {
	if !slices.Contains(allowed, v) {
		return fmt.Errorf("%s: must be one of %s, got %q", key, strings.Join(allowed, ", "), v)
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
