package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// signalChild, set in a process's environment, makes the test binary a
// program that stops slowly: it waits for SignalContext to end, says so,
// and then hangs, as a stop waiting on an unanswering broker would.
const signalChild = "ONCEFLOW_CLI_SIGNAL_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(signalChild) != "" {
		ctx, stop := SignalContext("child", os.Stderr)
		defer stop()
		fmt.Println("ready")
		<-ctx.Done()
		fmt.Println("stopping")
		select {}
	}
	os.Exit(m.Run())
}

// The first SIGTERM ends the context (a clean stop begins); a second one
// exits at once with ExitError, saying so.
func TestSecondSignalExits(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), signalChild+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	expect := func(want string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("child said %q (%v), want %q", lines.Text(), lines.Err(), want)
		}
	}
	expect("ready")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	expect("stopping")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the child did not exit on the second signal")
	}
	if code := cmd.ProcessState.ExitCode(); code != ExitError || !strings.Contains(stderr.String(), "child: second signal (terminated): exiting without a clean stop") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
