package sft

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"gorstar/internal/testenv"
)

// SFT shares the learning-rate schedule with RL through internal/schedule, not by importing rl.
func TestSFTDoesNotImportRL(t *testing.T) {
	testenv.Short(t, "runs go list over the module")
	goTool := testenv.Command(t, "go", "install Go")
	out, err := exec.Command(goTool, "list", "-deps", "gorstar/sft").Output()
	if err != nil {
		t.Fatalf("go list -deps gorstar/sft: %v", err)
	}
	if deps := strings.Fields(string(out)); slices.Contains(deps, "gorstar/rl") || !slices.Contains(deps, "gorstar/internal/schedule") {
		t.Errorf("gorstar/sft depends on gorstar/rl, or not on internal/schedule")
	}
}
