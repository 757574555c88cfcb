package train

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"gorstar/internal/usererr"
)

// Lock is a held run-directory lock. It is an flock(2) on Layout.Lock: the kernel drops it when
// its holder exits, however it exits, so the lock left behind by a crash (SIGKILL, power loss)
// is never stale — the next process simply takes it. The pid written into the file only names the
// holder in the error a second process gets.
type Lock struct {
	f *os.File
}

// AcquireLock takes the lock of the run directory dir (created if missing) without waiting. When
// another process holds it, the user error names that process's pid.
func AcquireLock(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, usererr.New("run directory %s: %v", dir, pathErr(err))
	}
	path := Layout{Dir: dir}.Lock()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, usererr.New("run directory %s: %v", dir, pathErr(err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, usererr.New("run directory %s is in use by %s (it holds %s); wait for it or use another --run-dir",
				dir, holder(path), filepath.Base(path))
		}
		return nil, usererr.New("run directory %s: lock %s: %v", dir, path, err)
	}
	// The pid is written only once the lock is ours, so a reader never sees a dead holder's pid
	// under a live lock (it may see none while we write: "another process").
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// holder describes the process named in the lock file.
func holder(path string) string {
	raw, _ := os.ReadFile(path)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && pid > 0 {
		return "process " + strconv.Itoa(pid)
	}
	return "another process"
}

// Release gives the lock up. The file stays; its pid is cleared so it names no one.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	l.f.Truncate(0)
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
