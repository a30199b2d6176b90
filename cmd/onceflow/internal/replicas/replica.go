package replicas

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec describes one replica process.
type Spec struct {
	// Executable is the onceflow binary. Required.
	Executable string
	// Args is the command line after the executable, e.g. `run orders
	// --brokers B --app-id A --input I --output O`. The harness appends
	// --instance-id, --log-level info, --state-dir and --metrics-addr.
	Args []string
	// Dir holds the replica's log (<Name>.log, spaces and parentheses
	// made file-safe) and, by default, its state. Required.
	Dir string
	// Name names the replica in messages and its log file. Required.
	Name string
	// Instance is the --instance-id. Default Name.
	Instance string
	// StateDir is the --state-dir. Default <Dir>/<Instance>-state.
	StateDir string
	// Port is the metrics port on 127.0.0.1. Default a free one.
	Port int
}

// Replica is one replica process. A restart (Start after it ended) runs
// the same command line: the same instance id, state directory and
// metrics port, its output appended to the same log.
type Replica struct {
	Name    string
	LogPath string
	Port    int

	exe  string
	args []string

	mu struct {
		sync.Mutex
		cmd    *exec.Cmd
		waited chan struct{}
		paused bool
	}
}

// New prepares a replica; Start runs it.
func New(s Spec) (*Replica, error) {
	if s.Executable == "" || s.Dir == "" || s.Name == "" {
		return nil, errors.New("replicas: a spec needs an executable, a directory and a name")
	}
	if s.Instance == "" {
		s.Instance = s.Name
	}
	if s.StateDir == "" {
		s.StateDir = filepath.Join(s.Dir, s.Instance+"-state")
	}
	if s.Port == 0 {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		s.Port = p
	}
	args := slices.Clone(s.Args)
	args = append(args, "--instance-id", s.Instance, "--log-level", "info",
		"--state-dir", s.StateDir, "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", s.Port))
	file := strings.NewReplacer("(", "", ")", "", " ", "-").Replace(s.Name)
	return &Replica{Name: s.Name, LogPath: filepath.Join(s.Dir, file+".log"), Port: s.Port, exe: s.Executable, args: args}, nil
}

// Start starts the process, appending its output to the replica's log.
// The replica must not be running.
func (r *Replica) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.cmd != nil && !closed(r.mu.waited) {
		return fmt.Errorf("replicas: %s is running", r.Name)
	}
	f, err := os.OpenFile(r.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("replicas: %w", err)
	}
	cmd := exec.Command(r.exe, r.args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("replicas: start %s: %w", r.Name, err)
	}
	waited := make(chan struct{})
	// Wait returns only once every thread of the process has exited, so
	// its port and state directory's lock are free for a restart then.
	go func() {
		cmd.Wait()
		f.Close()
		close(waited)
	}()
	r.mu.cmd, r.mu.waited, r.mu.paused = cmd, waited, false
	return nil
}

// Pid is the process id of the last start; 0 before the first.
func (r *Replica) Pid() int {
	cmd, _ := r.current()
	if cmd == nil {
		return 0
	}
	return cmd.Process.Pid
}

// Exited reports whether the process has ended (true before a start).
func (r *Replica) Exited() bool {
	_, waited := r.current()
	return waited == nil || closed(waited)
}

// Done is closed when the process of the last start has ended.
func (r *Replica) Done() <-chan struct{} {
	_, waited := r.current()
	if waited == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return waited
}

// Kill sends SIGKILL and waits until the process has ended.
func (r *Replica) Kill() {
	cmd, waited := r.current()
	if cmd == nil || closed(waited) {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-waited
}

// Pause stops the process with SIGSTOP; Resume continues it.
func (r *Replica) Pause() error {
	return r.signal(syscall.SIGSTOP, true)
}

// Resume continues a paused process with SIGCONT.
func (r *Replica) Resume() error {
	return r.signal(syscall.SIGCONT, false)
}

func (r *Replica) signal(sig syscall.Signal, paused bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.cmd == nil {
		return fmt.Errorf("replicas: %s never started", r.Name)
	}
	r.mu.paused = paused
	if err := r.mu.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("replicas: %v %s: %w", sig, r.Name, err)
	}
	return nil
}

// Stop asks for a graceful shutdown (SIGTERM, after SIGCONT when paused)
// and sends SIGKILL when the process has not ended within grace.
func (r *Replica) Stop(grace time.Duration) {
	r.mu.Lock()
	cmd, waited, paused := r.mu.cmd, r.mu.waited, r.mu.paused
	r.mu.paused = false
	r.mu.Unlock()
	if cmd == nil || closed(waited) {
		return
	}
	if paused {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-waited:
	case <-t.C:
		r.Kill()
	}
}

// Restart kills the process with SIGKILL, waits until it has ended and
// starts it again on its state.
func (r *Replica) Restart() error {
	r.Kill()
	return r.Start()
}

// Ready reports whether the replica's /readyz answers 200.
func (r *Replica) Ready(ctx context.Context) bool {
	resp, err := r.get(ctx, "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// WaitReady polls /readyz every 50 ms until it answers 200. It fails
// when the process ends first or ctx ends.
func (r *Replica) WaitReady(ctx context.Context) error {
	done := r.Done()
	for {
		if r.Ready(ctx) {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("replicas: %s exited before it was ready (see %s)", r.Name, r.LogPath)
		case <-ctx.Done():
			return fmt.Errorf("replicas: %s not ready: %w", r.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (r *Replica) get(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", r.Port, path), nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}

func (r *Replica) current() (*exec.Cmd, chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.cmd, r.mu.waited
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// StopAll stops the replicas at once (see Stop) and returns when every
// one has ended.
func StopAll(grace time.Duration, reps ...*Replica) {
	var wg sync.WaitGroup
	for _, r := range reps {
		if r == nil {
			continue
		}
		wg.Go(func() { r.Stop(grace) })
	}
	wg.Wait()
}

// WaitAllReady waits until every replica is ready (see WaitReady).
func WaitAllReady(ctx context.Context, reps ...*Replica) error {
	for _, r := range reps {
		if err := r.WaitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// FreePort finds a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("replicas: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
