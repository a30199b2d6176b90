//go:build kafkasecure

// The security suite: onceflow's commands against a real Kafka broker
// with SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), TLS with client
// certificates, SASL over TLS and ACLs, started by scripts/kafka-secure.sh
// (scripts/test-security.sh, `make test-security`). Each command runs as a
// separate process of the built binary, so everything it prints is seen.

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// binary is the onceflow binary TestMain builds.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "onceflow-security-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binary = filepath.Join(dir, "onceflow")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// secure is the broker scripts/kafka-secure.sh started: the KEY=VALUE
// lines of its env file (ONCEFLOW_SECURE_ENV).
type secure struct {
	v   map[string]string
	dir string // the script's state folder (broker/broker.log in it)
}

func loadSecure(t *testing.T) *secure {
	t.Helper()
	path := os.Getenv("ONCEFLOW_SECURE_ENV")
	if path == "" {
		t.Skip("ONCEFLOW_SECURE_ENV not set: run scripts/test-security.sh (a broker with SASL, TLS and ACLs)")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("ONCEFLOW_SECURE_ENV: %v", err)
	}
	defer f.Close()
	s := &secure{v: map[string]string{}, dir: filepath.Dir(path)}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			s.v[k] = v
		}
	}
	return s
}

func (s *secure) get(t *testing.T, k string) string {
	t.Helper()
	v := s.v["ONCEFLOW_SECURE_"+k]
	if v == "" {
		t.Fatalf("env file has no ONCEFLOW_SECURE_%s", k)
	}
	return v
}

// admin is a client of the super user (SCRAM-SHA-512 over SASL_PLAINTEXT).
func (s *secure) admin(t *testing.T) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.get(t, "SASL_PLAINTEXT")),
		kgo.SASL(scram.Auth{User: s.get(t, "ADMIN_USER"), Pass: s.get(t, "ADMIN_PASSWORD")}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// addSCRAMUser creates user with password for both SCRAM mechanisms, as
// kafka-configs --alter --add-config 'SCRAM-SHA-512=[password=...]' does.
func (s *secure) addSCRAMUser(t *testing.T, ctx context.Context, user, password string) {
	t.Helper()
	res, err := s.admin(t).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: user, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: password},
		{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: password},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("create SCRAM user %s: %v", user, err)
	}
}

// allow grants principal the ACLs of b (as admin) and fails on any error.
func (s *secure) allow(t *testing.T, ctx context.Context, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := s.admin(t).CreateACLs(ctx, b)
	if err != nil {
		t.Fatalf("create ACLs: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL %v %v %v: %v", r.Type, r.Name, r.Operation, r.Err)
		}
	}
}

// mechanism is one way to connect: the flags (brokers included) and the
// environment (the password) every command gets.
type mechanism struct {
	name  string
	flags []string
	env   []string
}

// mechanisms are the matrix's rows, all as principal User:app.
func (s *secure) mechanisms(t *testing.T) []mechanism {
	user, pass, ca := s.get(t, "USER"), s.get(t, "PASSWORD"), s.get(t, "CA")
	sasl := func(m string) []string { return []string{"--sasl-mechanism", m, "--sasl-user", user} }
	pw := []string{"ONCEFLOW_SASL_PASSWORD=" + pass}
	return []mechanism{
		{"PLAIN", append([]string{"-b", s.get(t, "SASL_PLAINTEXT")}, sasl("PLAIN")...), pw},
		{"SCRAM-SHA-256", append([]string{"-b", s.get(t, "SASL_PLAINTEXT")}, sasl("SCRAM-SHA-256")...), pw},
		{"SCRAM-SHA-512", append([]string{"-b", s.get(t, "SASL_PLAINTEXT")}, sasl("SCRAM-SHA-512")...), pw},
		{"TLS client certificate", []string{"-b", s.get(t, "SSL"), "--tls", "--tls-ca", ca,
			"--tls-cert", s.get(t, "CLIENT_CERT"), "--tls-key", s.get(t, "CLIENT_KEY")}, nil},
		{"SASL_SSL SCRAM-SHA-512", append([]string{"-b", s.get(t, "SASL_SSL"), "--tls", "--tls-ca", ca}, sasl("SCRAM-SHA-512")...), pw},
	}
}

// transcript collects every process's output, for the secrets check.
type transcript struct {
	mu  sync.Mutex
	all bytes.Buffer
}

func (tr *transcript) add(args []string, out, errOut string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	fmt.Fprintf(&tr.all, "$ onceflow %s\n%s%s", strings.Join(args, " "), out, errOut)
}

func (tr *transcript) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.all.String()
}

// command prepares the binary with args and env (on top of a clean
// environment: no ONCEFLOW_* variables of the caller).
func command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ONCEFLOW_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// onceflow runs a command to its end and returns its exit code and output.
func (tr *transcript) onceflow(t *testing.T, ctx context.Context, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := command(ctx, env, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("onceflow %v: %v", args, err)
	}
	tr.add(args, out.String(), errb.String())
	return code, out.String(), errb.String()
}

// replica is a `run` process in the background.
type replica struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	args []string
	done chan struct{}
}

func (tr *transcript) start(t *testing.T, ctx context.Context, env []string, args ...string) *replica {
	t.Helper()
	r := &replica{cmd: command(ctx, env, args...), args: args, done: make(chan struct{})}
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { r.cmd.Process.Kill(); <-r.done })
	return r
}

// stop ends the replica with SIGTERM and returns its exit code and output.
func (tr *transcript) stop(t *testing.T, r *replica) (int, string) {
	t.Helper()
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("replica did not stop within 60s")
	}
	tr.add(r.args, "", r.out.String())
	return r.cmd.ProcessState.ExitCode(), r.out.String()
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// matrixRow is one mechanism's results, command by command.
type matrixRow struct {
	mechanism string
	results   []string // "command: result"
}

// TestSecurityMatrix runs every command that connects to Kafka over each
// mechanism, as a principal with ACLs on its own prefix only: topics
// create, produce, run copy (exactly once, verified), probe of the
// replica's health, lag, verify, topics list and describe, sinks status,
// dlq list; then produce --example orders, run orders and verify --truth.
func TestSecurityMatrix(t *testing.T) {
	s := loadSecure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	run := fmt.Sprintf("sec%d", time.Now().UnixNano()%1_000_000)
	s.allow(t, ctx, kadm.NewACLs().Allow("User:"+s.get(t, "USER")).ResourcePatternType(kadm.ACLPatternPrefixed).
		Topics(run+"-").Groups(run+"-").TransactionalIDs(run+"-").Operations(kadm.OpAll))
	tr := &transcript{}
	var rows []matrixRow
	for i, m := range s.mechanisms(t) {
		row := matrixRow{mechanism: m.name}
		t.Run(m.name, func(t *testing.T) {
			prefix := fmt.Sprintf("%s-%d", run, i)
			row.results = matrixRun(t, ctx, tr, m, prefix)
		})
		rows = append(rows, row)
	}
	t.Log("security matrix (mechanism: command result; ...):")
	for _, r := range rows {
		t.Logf("%s: %s", r.mechanism, strings.Join(r.results, "; "))
	}
	for _, secret := range []string{s.get(t, "PASSWORD"), s.get(t, "ADMIN_PASSWORD")} {
		if strings.Contains(tr.String(), secret) {
			t.Errorf("a password appears in the commands' output")
		}
	}
}

// matrixRun runs the commands over m with names under prefix and returns
// one "command: result" per command.
func matrixRun(t *testing.T, ctx context.Context, tr *transcript, m mechanism, prefix string) []string {
	var results []string
	ok := func(cmd string, good bool, detail string) {
		t.Helper()
		if good {
			results = append(results, cmd+": ok")
			return
		}
		results = append(results, cmd+": FAILED")
		t.Errorf("%s over %s: %s", cmd, m.name, detail)
	}
	of := func(args ...string) (int, string, string) {
		t.Helper()
		return tr.onceflow(t, ctx, m.env, append(append(args, m.flags...), "--log-level", "debug")...)
	}
	// verify, again while it finds records missing (exit 1) for up to
	// 10 s: lag sees a transaction's offsets once its commit marker is on
	// the offsets topic; the output partitions get their markers a moment
	// later, and until then a read_committed reader stops before them.
	verifyEventually := func(args ...string) (code int, stdout, stderr string) {
		t.Helper()
		for range 40 {
			if code, stdout, stderr = of(append([]string{"verify"}, args...)...); code != exitFailed {
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
		return
	}
	in, out, app := prefix+"-in", prefix+"-out", prefix+"-copy"

	code, stdout, stderr := of("topics", "create", in, "--partitions", "3")
	ok("topics create", code == 0, fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	code, stdout, stderr = of("produce", "-t", in, "-n", "300", "--no-progress")
	ok("produce", code == 0 && strings.Contains(stdout, "produced 300 records"), fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))

	metrics := freeAddr(t)
	r := tr.start(t, ctx, m.env, append(append([]string{"run", "copy", "--input", in, "--output", out,
		"--app-id", app, "--instance-id", "r1", "--state-dir", t.TempDir(), "--metrics-addr", metrics}, m.flags...),
		"--log-level", "debug")...)
	code, stdout, stderr = of("lag", "-g", app, "-t", in, "--wait", "90s")
	ok("lag", code == 0 && strings.Contains(stdout, "300"), fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	code, stdout, stderr = tr.onceflow(t, ctx, nil, "probe", "http://"+metrics+"/healthz")
	ok("probe (healthz)", code == 0, fmt.Sprintf("exit %d: %s %s", code, stdout, stderr))
	code, stdout, stderr = verifyEventually("-i", in, "-o", out)
	ok("run copy + verify", code == 0 && strings.Contains(stdout, "input 300, output 300, missing 0, duplicates 0, unexpected 0: ok"),
		fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	code, stdout, stderr = of("topics", "list")
	ok("topics list", code == 0 && strings.Contains(stdout, out), fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	code, stdout, stderr = of("topics", "describe", in)
	ok("topics describe", code == 0 && strings.Contains(stdout, in), fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	code, stdout, stderr = of("sinks", "status", "--app-id", app)
	ok("sinks status", code == 0, fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	code, stdout, stderr = of("dlq", "list", "--app-id", app, "--sink", "none")
	ok("dlq list", code == 0 || code == exitError && strings.Contains(stderr, "none"), fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	code, logs := tr.stop(t, r)
	ok("run copy (stop)", code == 0 && strings.Contains(logs, "300 in, 300 out"), fmt.Sprintf("exit %d: %s", code, tail(logs)))

	// The orders topology: state stores (changelogs, the restore reader),
	// dedup and version gates, a rejected topic.
	oin, oout, oapp := prefix+"-orders", prefix+"-totals", prefix+"-orders-app"
	truth := filepath.Join(t.TempDir(), "truth.json")
	code, stdout, stderr = of("produce", "--example", "orders", "-t", oin, "-n", "400", "--partitions", "3", "--truth", truth, "--no-progress")
	ok("produce --example orders", code == 0, fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	r = tr.start(t, ctx, m.env, append(append([]string{"run", "orders", "--input", oin, "--output", oout,
		"--app-id", oapp, "--instance-id", "r1", "--state-dir", t.TempDir()}, m.flags...), "--log-level", "debug")...)
	code, stdout, stderr = of("lag", "-g", oapp, "-t", oin, "--wait", "90s")
	ok("lag (orders)", code == 0, fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	code, stdout, stderr = verifyEventually("--truth", truth, "-i", oin, "-o", oout, "--rejected", oapp+"-rejected")
	ok("run orders + verify --truth", code == 0, fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	code, logs = tr.stop(t, r)
	ok("run orders (stop)", code == 0, fmt.Sprintf("exit %d: %s", code, tail(logs)))
	return results
}

// tail is the last lines of s, for failure messages.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}
