package config

import (
	"fmt"
	"time"
)

// Duration is a time.Duration written in TOML as a string ("4s", "1m30s").
type Duration struct{ time.Duration }

// D returns a Duration of d.
func D(d time.Duration) Duration { return Duration{d} }

func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("want a duration like \"4s\" or \"250ms\", got %q", b)
	}
	d.Duration = v
	return nil
}
