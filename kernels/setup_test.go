package kernels

import (
	"testing"

	"gorstar/internal/usererr"
)

// A GPU kind without its Device installed is refused as a user error before Init.
func TestSetupRefusesAGPUNotOpen(t *testing.T) {
	for _, kind := range []string{"cuda", "rocm"} {
		if err := Setup(kind, 0, 1); !usererr.Is(err) {
			t.Errorf("Setup(%q) on %s: %v, want a user error", kind, Backend(), err)
		}
	}
	if err := Setup("tpu", 0, 1); err == nil || usererr.Is(err) {
		t.Errorf("Setup(tpu): %v, want a programming error", err)
	}
}
