package metrics

import (
	"os/exec"
	"strings"
	"testing"

	"gorstar/internal/testenv"
)

// The metrics stay pure: no package of the module (no runner, no engine, no sandbox) below them.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	testenv.Short(t, "runs go list over the module")
	goTool := testenv.Command(t, "go", "install Go")
	out, err := exec.Command(goTool, "list", "-deps", "gorstar/eval/metrics").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "gorstar/") && dep != "gorstar/eval/metrics" {
			t.Errorf("eval/metrics depends on %s", dep)
		}
	}
}
