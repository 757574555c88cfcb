// Package childtest lets a test interrupt a run the hard way: the test binary runs itself again
// as a child with a spec in an environment variable, the child (TestMain's branch on that
// variable) does the work and kills itself with SIGKILL at a moment the spec chooses, and the
// parent checks that a real SIGKILL ended it, so that nothing of the child survives but its
// files. Package sft and rl use it for their resume tests.
package childtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"syscall"
)

// RunKilled runs the test binary again, running no tests, with env set to spec as JSON, and
// returns an error (with the child's output) unless SIGKILL ended it.
func RunKilled(env string, spec any) error {
	js, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	cmd := osexec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+string(js))
	out, err := cmd.CombinedOutput()
	var exit *osexec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		return fmt.Errorf("child ended with %v, want SIGKILL\n%s", err, out)
	}
	return nil
}

// Decode reads the child's spec from env into spec.
func Decode(env string, spec any) error {
	return json.Unmarshal([]byte(os.Getenv(env)), spec)
}

// KillSelf ends the calling process with SIGKILL: no deferred call, flush or exit handler runs.
func KillSelf() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }
