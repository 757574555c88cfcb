package train

import (
	"bufio"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"testing"

	"gorstar/internal/testenv"
	"gorstar/internal/usererr"
)

// lockChildEnv makes the test binary a lock holder: TestLockHolderChild takes the lock of the
// directory it names, says so on stdout and waits to be killed.
const lockChildEnv = "GORSTAR_TRAIN_LOCK_CHILD"

func TestLockHolderChild(t *testing.T) {
	dir := os.Getenv(lockChildEnv)
	if dir == "" {
		t.Skip("helper process for TestLockExcludesAndSurvivesACrash")
	}
	if _, err := AcquireLock(dir); err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(3)
	}
	os.Stdout.WriteString("locked\n")
	select {} // held until SIGKILL
}

func TestLockExcludesAndSurvivesACrash(t *testing.T) {
	testenv.Short(t, "SIGKILLs a child process")
	dir := t.TempDir()
	child := osexec.Command(os.Args[0], "-test.run=^TestLockHolderChild$")
	child.Env = append(os.Environ(), lockChildEnv+"="+dir)
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("child: %q, %v", line, err)
	}

	_, err = AcquireLock(dir)
	if err == nil || !usererr.Is(err) {
		t.Fatalf("second holder: want a user error, got %v", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "process "+strconv.Itoa(child.Process.Pid)) || strings.Contains(msg, "\n") {
		t.Errorf("error should name the holder pid %d on one line: %q", child.Process.Pid, msg)
	}

	// A crash leaves the file with the dead pid, but not the lock.
	child.Process.Kill()
	child.Wait()
	l, err := AcquireLock(dir)
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	raw, _ := os.ReadFile(Layout{Dir: dir}.Lock())
	if strings.TrimSpace(string(raw)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file names %q, want our pid %d", raw, os.Getpid())
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := AcquireLock(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l2.Release()
}

func TestLockInSameProcessExcludes(t *testing.T) {
	dir := t.TempDir()
	l, err := AcquireLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := AcquireLock(dir); err == nil || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("want an error naming our pid, got %v", err)
	}
}

func TestLockDirIsAFile(t *testing.T) {
	file := t.TempDir() + "/run"
	os.WriteFile(file, []byte("x"), 0o644)
	if _, err := AcquireLock(file); err == nil || !usererr.Is(err) || !strings.Contains(err.Error(), file) {
		t.Fatalf("want a user error naming %s, got %v", file, err)
	}
}
