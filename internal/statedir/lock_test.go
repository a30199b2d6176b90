package statedir

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// A second holder of one directory is refused with the first's pid; once
// the first releases it, the directory can be taken again.
func TestSecondHolderIsRefusedWithPid(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("state dir in use by another process (pid %d)", os.Getpid())) {
		t.Fatalf("second acquire: %v", err)
	}
	l.Release()
	l2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	l2.Release()
}
