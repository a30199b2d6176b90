// Package statedir guards a replica's state directory: one process at a
// time holds it (an flock on a lock file that also names the holder's
// pid), so that a second replica started on the same directory, or a
// reset that would wipe it, is refused with the pid of the process that
// holds it instead of failing deep inside the store.
package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrInUse is wrapped by Lock's error when another process holds the
// directory. Retryable once that process stops.
var ErrInUse = errors.New("state dir in use by another process")

// LockFile is the lock file's name inside a state directory.
const LockFile = "onceflow.lock"

// Lock is a held state directory. Release it when done.
type Lock struct {
	f *os.File
}

// Acquire creates dir if needed and locks it for this process. The lock
// is an flock, so it is released by the kernel when the process dies
// (kill -9 included): a stale lock file never blocks a restart.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("statedir: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("statedir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s): %s", ErrInUse, holder(path), dir)
		}
		return nil, fmt.Errorf("statedir: lock %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// holder names the process that holds the lock at path: "pid N", or
// "pid unknown" when the file does not say.
func holder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "pid unknown"
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return "pid unknown"
	}
	return "pid " + strconv.Itoa(pid)
}

// Release unlocks the directory. The lock file stays (removing it would
// race with a process that has just opened it).
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}
