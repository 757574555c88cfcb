package childtest

import (
	"os"
	"path/filepath"
	"testing"
)

const testEnv = "GORSTAR_CHILDTEST_CHILD"

type spec struct {
	Kill bool
	File string // written before the child ends
}

func TestMain(m *testing.M) {
	if os.Getenv(testEnv) != "" {
		var s spec
		if err := Decode(testEnv, &s); err != nil {
			os.Exit(2)
		}
		if err := os.WriteFile(s.File, []byte("done"), 0o644); err != nil {
			os.Exit(2)
		}
		if s.Kill {
			KillSelf()
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// RunKilled accepts a child that SIGKILLed itself, after it got its spec, and no other ending.
func TestRunKilled(t *testing.T) {
	for _, kill := range []bool{true, false} {
		file := filepath.Join(t.TempDir(), "child")
		err := RunKilled(testEnv, spec{Kill: kill, File: file})
		if kill && err != nil {
			t.Errorf("killed child: %v", err)
		}
		if !kill && err == nil {
			t.Error("a child that exited normally was taken as killed")
		}
		if _, err := os.Stat(file); err != nil {
			t.Errorf("kill=%v: child did not get its spec: %v", kill, err)
		}
	}
}
