package replicas

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain runs the test binary as a fake replica when its first argument
// is fake-replica: it serves /readyz (200 once --ready-after has passed)
// and /metrics on --metrics-addr, logs its pid and arguments, and on
// SIGTERM logs "stopped" and exits (unless --ignore-term). --exit-now
// makes it exit at once with status 3.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "fake-replica" {
		os.Exit(fakeReplica(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func fakeReplica(args []string) int {
	fs := flag.NewFlagSet("fake", flag.ContinueOnError)
	addr := fs.String("metrics-addr", "", "")
	readyAfter := fs.Duration("ready-after", 0, "")
	ignoreTerm := fs.Bool("ignore-term", false, "")
	exitNow := fs.Bool("exit-now", false, "")
	instance := fs.String("instance-id", "", "")
	state := fs.String("state-dir", "", "")
	fs.String("log-level", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fmt.Printf("pid %d instance %s state %s\n", os.Getpid(), *instance, *state)
	if *exitNow {
		return 3
	}
	signal.Ignore(syscall.SIGTERM)
	term := make(chan os.Signal, 1)
	if !*ignoreTerm {
		signal.Notify(term, syscall.SIGTERM)
	}
	ready := time.Now().Add(*readyAfter)
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if time.Now().Before(ready) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE fake_total counter\nfake_total{kind=\"a\",p=\"0\"} 2\nfake_total{kind=\"b\",p=\"0\"} 3\nfake_total{kind=\"a\",p=\"1\"} 4\n"+
			"# TYPE fake_seconds gauge\nfake_seconds{p=\"0\"} 1.5\nfake_seconds{p=\"1\"} 7\n")
	})
	go http.ListenAndServe(*addr, mux)
	<-term
	fmt.Println("stopped")
	return 0
}

func newFake(t *testing.T, name string, args ...string) *Replica {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Spec{Executable: exe, Args: append([]string{"fake-replica"}, args...), Dir: t.TempDir(), Name: name, Instance: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Kill() })
	return r
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func readLog(t *testing.T, r *Replica) string {
	t.Helper()
	b, err := os.ReadFile(r.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A replica starts with the flags the harness adds, gets ready, answers
// its metrics, stops gracefully on SIGTERM, and a restart runs on the same
// port, state and log.
func TestReplicaLifecycle(t *testing.T) {
	r := newFake(t, "r1 (restarted)", "--ready-after", "300ms")
	if got, want := filepath.Base(r.LogPath), "r1-restarted.log"; got != want {
		t.Errorf("log file %s, want %s", got, want)
	}
	if !r.Exited() || r.Pid() != 0 {
		t.Errorf("before its start: exited %t, pid %d", r.Exited(), r.Pid())
	}
	ctx := waitCtx(t)
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err == nil {
		t.Error("a second start of a running replica succeeded")
	}
	first := r.Pid()
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := r.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Sum("fake_total"); got != 9 {
		t.Errorf("sum %v, want 9", got)
	}
	if got := m.Sum("fake_total", "kind", "a"); got != 6 {
		t.Errorf("sum of kind a %v, want 6", got)
	}
	if got := m.Sum("fake_total", "kind", "a", "p", "1"); got != 4 {
		t.Errorf("sum of kind a, p 1 %v, want 4", got)
	}
	if got := m.Max("fake_seconds"); got != 7 {
		t.Errorf("max %v, want 7", got)
	}
	if got := m.Sum("missing_total"); got != 0 {
		t.Errorf("a missing metric sums to %v", got)
	}
	r.Stop(10 * time.Second)
	if !r.Exited() || !strings.Contains(readLog(t, r), "stopped") {
		t.Fatalf("not stopped gracefully: exited %t, log %q", r.Exited(), readLog(t, r))
	}
	port := r.Port
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Pid() == first || r.Port != port {
		t.Errorf("restart: pid %d (first %d), port %d (first %d)", r.Pid(), first, r.Port, port)
	}
	log := readLog(t, r)
	if n := strings.Count(log, "instance r1 state "+filepath.Join(filepath.Dir(r.LogPath), "r1-state")); n != 2 {
		t.Errorf("the log holds %d starts with instance r1 and its state dir, want 2:\n%s", n, log)
	}
}

// SIGKILL ends the process at once (no graceful stop); Restart starts it
// again; SIGSTOP makes it stop answering until SIGCONT.
func TestReplicaKillPauseRestart(t *testing.T) {
	r := newFake(t, "r2")
	ctx := waitCtx(t)
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, r.Pid())
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if r.Ready(short) {
		t.Error("a paused replica answered /readyz")
	}
	cancel()
	if err := r.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	first := r.Pid()
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Pid() == first {
		t.Error("restart kept the pid")
	}
	if strings.Contains(readLog(t, r), "stopped") {
		t.Error("a SIGKILLed replica stopped gracefully")
	}
	// A paused replica stops too: SIGCONT before SIGTERM.
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	StopAll(10*time.Second, r)
	if !r.Exited() || !strings.Contains(readLog(t, r), "stopped") {
		t.Errorf("a paused replica did not stop gracefully: exited %t", r.Exited())
	}
}

// A replica that ignores SIGTERM is killed after the grace; one that exits
// before it is ready fails WaitReady at once.
func TestReplicaStopGraceAndEarlyExit(t *testing.T) {
	r := newFake(t, "r3", "--ignore-term")
	ctx := waitCtx(t)
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	r.Stop(200 * time.Millisecond)
	if !r.Exited() {
		t.Fatal("still running after the grace")
	}
	if d := time.Since(began); d < 200*time.Millisecond {
		t.Errorf("stopped after %v, before the grace: SIGTERM was not ignored", d)
	}

	bad := newFake(t, "r4", "--exit-now")
	if err := bad.Start(); err != nil {
		t.Fatal(err)
	}
	err := bad.WaitReady(ctx)
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Errorf("WaitReady of a replica that exits: %v", err)
	}
}

// waitStopped waits until every thread of process pid is stopped (state
// T in /proc): SIGSTOP is delivered asynchronously.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		stopped := len(tasks) > 0
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			// The state follows the command name in parentheses.
			if i := strings.LastIndexByte(string(b), ')'); err != nil || i < 0 || !strings.HasPrefix(string(b[i+1:]), " T") {
				stopped = false
			}
		}
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not stopped after SIGSTOP", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
