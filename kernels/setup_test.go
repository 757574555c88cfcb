package kernels

import (
	"strings"
	"testing"

	"gorstar/internal/usererr"
)

// The device kind this binary was not built for is refused as a user error before Init.
func TestSetupRefusesTheOtherBackend(t *testing.T) {
	other := "rocm"
	if strings.HasPrefix(Backend(), "rocm") {
		other = "cpu"
	}
	if err := Setup(other, 0, 1); !usererr.Is(err) {
		t.Errorf("Setup(%q) on %s: %v, want a user error", other, Backend(), err)
	}
	if err := Setup("tpu", 0, 1); err == nil || usererr.Is(err) {
		t.Errorf("Setup(tpu): %v, want a programming error", err)
	}
}
