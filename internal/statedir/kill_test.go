package statedir

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestMain lets the test binary act as a holder process: with
// ONCEFLOW_STATEDIR_HOLD set it locks that dir, prints "held" and waits
// to be killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("ONCEFLOW_STATEDIR_HOLD"); dir != "" {
		if _, err := Acquire(dir); err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(2)
		}
		os.Stdout.WriteString("held\n")
		select {}
	}
	os.Exit(m.Run())
}

// A holder killed with SIGKILL leaves its lock file, with its pid, behind;
// the next process takes the dir at once, and while the holder lives it is
// refused with the holder's pid, not its own.
func TestLockOfAKilledProcessIsFree(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ONCEFLOW_STATEDIR_HOLD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "held\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("holder: %q", line)
	}
	_, err = Acquire(dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("while the holder lives: %v, want in use by pid %d", err, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	l.Release()
}

// Of many acquirers racing for one dir, exactly one wins.
func TestOneOfManyRacingAcquirersWins(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var won []*Lock
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := Acquire(dir)
			if err != nil {
				if !errors.Is(err, ErrInUse) {
					t.Errorf("acquire: %v", err)
				}
				return
			}
			mu.Lock()
			won = append(won, l)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Errorf("%d winners, want 1", len(won))
	}
	for _, l := range won {
		l.Release()
	}
}
