package kernels

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestExecWithOpenMPEnv runs this test binary as a child that calls ExecWithOpenMPEnv and prints
// what libgomp will read: both variables are added when neither is set, and a user's choice of
// either is left alone (no re-execution, the other one not added).
func TestExecWithOpenMPEnv(t *testing.T) {
	if os.Getenv("GK_TEST_OPENMP_ENV_CHILD") == "1" {
		ExecWithOpenMPEnv(os.Args)
		fmt.Printf("GOMP_SPINCOUNT=%q OMP_WAIT_POLICY=%q\n", os.Getenv("GOMP_SPINCOUNT"), os.Getenv("OMP_WAIT_POLICY"))
		os.Exit(0)
	}
	for _, c := range []struct{ set, want string }{
		{"", fmt.Sprintf("GOMP_SPINCOUNT=%q OMP_WAIT_POLICY=%q", SpinCount, WaitPolicy)},
		{"GOMP_SPINCOUNT=50", `GOMP_SPINCOUNT="50" OMP_WAIT_POLICY=""`},
		{"OMP_WAIT_POLICY=passive", `GOMP_SPINCOUNT="" OMP_WAIT_POLICY="passive"`},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestExecWithOpenMPEnv$")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOMP_SPINCOUNT=") && !strings.HasPrefix(kv, "OMP_WAIT_POLICY=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "GK_TEST_OPENMP_ENV_CHILD=1")
		if c.set != "" {
			cmd.Env = append(cmd.Env, c.set)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("with %q: %v\n%s", c.set, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("with %q: the child saw %s, want %s", c.set, got, c.want)
		}
	}
}
