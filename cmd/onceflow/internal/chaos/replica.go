package chaos

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The replica metrics the run reads (see internal/engine's metrics).
const (
	oldestPendingMetric = "onceflow_oldest_pending_seconds"
	assignedMetric      = "onceflow_assigned_partitions"
)

// replica is one `onceflow run <topology>` process. A restart starts a new
// process with the same instance id, state directory and metrics port.
type replica struct {
	name    string
	args    []string
	exe     string
	port    int
	logPath string

	cmd    *exec.Cmd
	waited chan struct{}
	paused bool
}

// newReplica prepares replica name running the command line base (`run
// orders ...`); start runs it.
func newReplica(exe, dir, name string, base []string) (*replica, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := slices.Clone(base)
	args = append(args, "--instance-id", name, "--log-level", "info",
		"--state-dir", filepath.Join(dir, name+"-state"), "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port))
	return &replica{name: name, args: args, exe: exe, port: port, logPath: filepath.Join(dir, name+".log")}, nil
}

// start starts the process, appending to the replica's log.
func (r *replica) start() error {
	f, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	cmd := exec.Command(r.exe, r.args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("chaos: start %s: %w", r.name, err)
	}
	waited := make(chan struct{})
	go func() {
		cmd.Wait()
		f.Close()
		close(waited)
	}()
	r.cmd, r.waited, r.paused = cmd, waited, false
	return nil
}

// exited reports whether the process has ended.
func (r *replica) exited() bool {
	select {
	case <-r.waited:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process to end.
func (r *replica) kill() {
	if r.cmd == nil || r.exited() {
		return
	}
	r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.waited
}

// pause stops the process with SIGSTOP; resume continues it.
func (r *replica) pause() error {
	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("chaos: pause %s: %w", r.name, err)
	}
	r.paused = true
	return nil
}

func (r *replica) resume() error {
	r.paused = false
	if err := r.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("chaos: resume %s: %w", r.name, err)
	}
	return nil
}

// stop asks for a graceful shutdown (SIGTERM) and kills after grace.
func (r *replica) stop(grace time.Duration) {
	if r.cmd == nil || r.exited() {
		return
	}
	if r.paused {
		r.resume()
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.waited:
	case <-time.After(grace):
		r.kill()
	}
}

// metrics reads the named metrics from the replica's /metrics, each summed
// over its label sets, and for oldestPendingMetric the maximum instead.
func (r *replica) metrics(client *http.Client) (map[string]float64, error) {
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", r.port))
	if err != nil {
		return nil, fmt.Errorf("chaos: metrics of %s: %w", r.name, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("chaos: metrics of %s: %w", r.name, err)
	}
	m := map[string]float64{}
	for _, v := range families[assignedMetric].GetMetric() {
		m[assignedMetric] += v.GetGauge().GetValue()
	}
	for _, v := range families[oldestPendingMetric].GetMetric() {
		m[oldestPendingMetric] = max(m[oldestPendingMetric], v.GetGauge().GetValue())
	}
	return m, nil
}

// freePort finds a free loopback port for a replica's metrics.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("chaos: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
