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
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
	// One request may name a user once: one request a mechanism.
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		res, err := s.admin(t).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: m, Iterations: 4096, Password: password}})
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("create SCRAM user %s (%v): %v", user, m, err)
		}
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

// transcript collects every process's output (not its command line,
// which holds a --sasl-password), for the secrets check.
type transcript struct {
	mu  sync.Mutex
	all bytes.Buffer
}

func (tr *transcript) add(_ []string, out, errOut string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.all.WriteString(out)
	tr.all.WriteString(errOut)
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
	if cmd.ProcessState == nil {
		t.Fatalf("onceflow %v: %v", args, err)
	}
	code = cmd.ProcessState.ExitCode() // -1: killed (the context ended)
	tr.add(args, out.String(), errb.String())
	return code, out.String(), errb.String()
}

// replica is a `run` process in the background.
type replica struct {
	cmd  *exec.Cmd
	out  syncBuffer
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

// waitReady waits until replica r, serving on addr, answers /readyz with
// 200 (its tasks restored and processing).
func (tr *transcript) waitReady(t *testing.T, r *replica, addr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-r.done:
			deadline = time.Now()
		default:
		}
		if time.Now().After(deadline) {
			code, logs := tr.stop(t, r)
			t.Fatalf("%s/readyz not 200 within %v (last: %v); the replica exited %d:\n%s", addr, within, err, code, tail(logs))
		}
		time.Sleep(100 * time.Millisecond)
	}
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
	ok("run copy + verify", code == 0 && strings.Contains(stdout, "input 300, output 300, rejections 0: with output 300, rejected only 0, missing 0, doubled 0, unexpected 0: ok"),
		fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	code, stdout, stderr = of("topics", "list")
	ok("topics list", code == 0 && strings.Contains(stdout, out), fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	code, stdout, stderr = of("topics", "describe", in)
	ok("topics describe", code == 0 && strings.Contains(stdout, in), fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	code, stdout, stderr = of("sinks", "status", "--app-id", app)
	ok("sinks status", code == 0, fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
	// An empty dead-letter topic, as a topology with a sink "hook" has.
	if code, stdout, stderr = of("topics", "create", app+"-sink-hook-dlq"); code != 0 {
		t.Errorf("topics create %s-sink-hook-dlq: exit %d: %s %s", app, code, stdout, tail(stderr))
	}
	code, stdout, stderr = of("dlq", "list", "--app-id", app, "--sink", "hook")
	ok("dlq list", code == 0 && strings.Contains(stdout, "0 dead letters"), fmt.Sprintf("exit %d: %s %s", code, stdout, tail(stderr)))
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

// replicaACLs are the ACLs docs/security.md lists for one replica of
// application app reading topic in and writing topic out (keep the two in
// step): without txn, the transactional-id ACL is left out.
func replicaACLs(principal, app, in, out string, txn, group bool) []*kadm.ACLBuilder {
	p := "User:" + principal
	acls := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow(p).Topics(in).Operations(kadm.OpRead, kadm.OpDescribeConfigs),
		kadm.NewACLs().Allow(p).Topics(out).Operations(kadm.OpWrite, kadm.OpCreate, kadm.OpDescribeConfigs),
		kadm.NewACLs().Allow(p).Topics(app+"-").ResourcePatternType(kadm.ACLPatternPrefixed).
			Operations(kadm.OpRead, kadm.OpWrite, kadm.OpCreate, kadm.OpDescribeConfigs, kadm.OpDelete),
	}
	if group {
		acls = append(acls, kadm.NewACLs().Allow(p).Groups(app).Operations(kadm.OpRead))
	}
	if txn {
		acls = append(acls, kadm.NewACLs().Allow(p).TransactionalIDs(app+"-").ResourcePatternType(kadm.ACLPatternPrefixed).
			Operations(kadm.OpWrite, kadm.OpDescribe))
	}
	return acls
}

// adminFlags connect a tooling command as the super user.
func (s *secure) adminFlags(t *testing.T) (flags, env []string) {
	return []string{"-b", s.get(t, "SASL_PLAINTEXT"), "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", s.get(t, "ADMIN_USER")},
		[]string{"ONCEFLOW_SASL_PASSWORD=" + s.get(t, "ADMIN_PASSWORD")}
}

// TestSecurityReplicaACLs runs the orders topology (stores, changelogs,
// gates, a rejected topic) as a principal that has only the ACLs
// docs/security.md lists, and checks its output against the truth; then
// as one without the transactional-id ACL, which must stop at once with
// an error naming it.
func TestSecurityReplicaACLs(t *testing.T) {
	s := loadSecure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tr := &transcript{}
	run := fmt.Sprintf("acl%d", time.Now().UnixNano()%1_000_000)
	adminFlags, adminEnv := s.adminFlags(t)
	in, truth := run+"-orders", filepath.Join(t.TempDir(), "truth.json")
	code, stdout, stderr := tr.onceflow(t, ctx, adminEnv, append([]string{"produce", "--example", "orders", "-t", in,
		"-n", "500", "--partitions", "3", "--truth", truth, "--no-progress"}, adminFlags...)...)
	if code != 0 {
		t.Fatalf("produce as admin: exit %d: %s %s", code, stdout, stderr)
	}

	replica := func(t *testing.T, user, app, out string, txn, group bool) (flags, env []string) {
		password := "pw-" + app
		s.addSCRAMUser(t, ctx, user, password)
		for _, b := range replicaACLs(user, app, in, out, txn, group) {
			s.allow(t, ctx, b)
		}
		return []string{"run", "orders", "--input", in, "--output", out, "--app-id", app, "--instance-id", "r1",
				"--state-dir", t.TempDir(), "-b", s.get(t, "SASL_PLAINTEXT"), "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", user, "--log-level", "info"},
			[]string{"ONCEFLOW_SASL_PASSWORD=" + password}
	}

	t.Run("documented ACLs", func(t *testing.T) {
		app, out := run+"-app", run+"-totals"
		args, env := replica(t, run+"-least", app, out, true, true)
		r := tr.start(t, ctx, env, args...)
		code, stdout, stderr := tr.onceflow(t, ctx, adminEnv, append([]string{"lag", "-g", app, "-t", in, "--wait", "120s"}, adminFlags...)...)
		if code != 0 {
			_, logs := tr.stop(t, r)
			t.Fatalf("lag: exit %d: %s %s\nreplica:\n%s", code, stdout, stderr, tail(logs))
		}
		for range 40 {
			code, stdout, stderr = tr.onceflow(t, ctx, adminEnv, append([]string{"verify", "--truth", truth, "-i", in, "-o", out,
				"--rejected", app + "-rejected"}, adminFlags...)...)
			if code != exitFailed {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if code != 0 {
			t.Errorf("verify --truth: exit %d: %s %s", code, stdout, stderr)
		}
		code, logs := tr.stop(t, r)
		if code != 0 || strings.Contains(logs, "[WARN]") || strings.Contains(logs, "[ERROR]") {
			t.Errorf("replica: exit %d, warnings or errors:\n%s", code, logs)
		}

		// Started again on an empty state directory, the replica restores
		// its stores from their changelogs (READ on the internal topics).
		args[slices.Index(args, "--state-dir")+1] = t.TempDir()
		metrics := freeAddr(t)
		r = tr.start(t, ctx, env, append(args, "--metrics-addr", metrics)...)
		tr.waitReady(t, r, metrics, 60*time.Second)
		t.Logf("as a principal with the documented ACLs only: %s", lastLine(logs))
		code, logs = tr.stop(t, r)
		t.Logf("started again on an empty state directory: %s", lastLine(logs))
		restored := regexp.MustCompile(`, ([0-9]+) restored`).FindStringSubmatch(logs)
		if code != 0 || restored == nil || restored[1] == "0" || strings.Contains(logs, "[WARN]") || strings.Contains(logs, "[ERROR]") {
			t.Errorf("restarted replica: exit %d, restored %v, warnings or errors:\n%s", code, restored, tail(logs))
		}
	})

	for _, tc := range []struct {
		name, id   string
		txn, group bool
		within     time.Duration
		want       []string
	}{
		{"without the transactional-id ACL", "notxn", false, true, 30 * time.Second, []string{"TransactionalId", "-notxn-r1", "docs/security.md"}},
		{"without the group ACL", "nogroup", true, false, 30 * time.Second, []string{"not authorized to access this group", "READ on the group", "-nogroup", "docs/security.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app, out := run+"-"+tc.id, run+"-"+tc.id+"-totals"
			args, env := replica(t, run+"-"+tc.id, app, out, tc.txn, tc.group)
			start := time.Now()
			rctx, cancel := context.WithTimeout(ctx, 2*tc.within)
			defer cancel()
			code, stdout, stderr := tr.onceflow(t, rctx, env, args...)
			took := time.Since(start)
			t.Logf("the replica %s: exit %d after %v; it printed:\n%s%s", tc.name, code, took.Round(100*time.Millisecond), stdout, stderr)
			if code != exitError || took > tc.within {
				t.Fatalf("exit %d after %v, want %d within %v", code, took, exitError, tc.within)
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not name %q", want)
				}
			}
		})
	}
}

// TestSecurityWrongPasswordAndSecrets runs the commands with a distinctive
// password at debug level (given by the environment variable, then by the
// flag) and with a wrong one: the wrong one fails each command at once with
// an error that says authentication failed; neither password appears in
// anything the commands print, nor in the broker's log.
func TestSecurityWrongPasswordAndSecrets(t *testing.T) {
	s := loadSecure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run := fmt.Sprintf("pw%d", time.Now().UnixNano()%1_000_000)
	user := run + "-user"
	secret := "Zq9-onceflow-" + run + "-sesame"
	wrong := "Wr0ng-onceflow-" + run + "-sesame"
	s.addSCRAMUser(t, ctx, user, secret)
	s.allow(t, ctx, kadm.NewACLs().Allow("User:"+user).ResourcePatternType(kadm.ACLPatternPrefixed).
		Topics(run+"-").Groups(run+"-").TransactionalIDs(run+"-").Operations(kadm.OpAll))
	tr := &transcript{}
	base := []string{"-b", s.get(t, "SASL_SSL"), "--tls", "--tls-ca", s.get(t, "CA"),
		"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", user, "--log-level", "debug"}

	for i, how := range []struct {
		name  string
		flags []string
		env   []string
	}{
		{"password from ONCEFLOW_SASL_PASSWORD", base, []string{"ONCEFLOW_SASL_PASSWORD=" + secret}},
		{"password from --sasl-password, JSON logs", append(base[:len(base):len(base)], "--sasl-password", secret, "--log-format", "json"), nil},
	} {
		t.Run(how.name, func(t *testing.T) {
			m := mechanism{name: how.name, flags: how.flags, env: how.env}
			for _, r := range matrixRun(t, ctx, tr, m, fmt.Sprintf("%s-%d", run, i)) {
				if !strings.HasSuffix(r, ": ok") {
					t.Errorf("%s", r)
				}
			}
		})
	}

	t.Run("wrong password", func(t *testing.T) {
		env := []string{"ONCEFLOW_SASL_PASSWORD=" + wrong}
		for _, args := range [][]string{
			{"topics", "list"},
			{"topics", "create", run + "-x"},
			{"produce", "-t", run + "-x", "-n", "1", "--no-progress"},
			{"verify", "-i", run + "-x", "-o", run + "-y"},
			{"lag", "-g", run + "-g", "-t", run + "-x", "--wait", "60s"},
			{"sinks", "status", "--app-id", run},
			{"dlq", "list", "--app-id", run, "--sink", "s"},
			{"run", "copy", "--input", run + "-x", "--output", run + "-y", "--app-id", run + "-app", "--instance-id", "r1", "--state-dir", t.TempDir()},
			{"run", "orders", "--input", run + "-x", "--output", run + "-y", "--app-id", run + "-app", "--instance-id", "r1", "--state-dir", t.TempDir()},
		} {
			start := time.Now()
			rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			code, _, stderr := tr.onceflow(t, rctx, env, append(args, base...)...)
			cancel()
			took := time.Since(start)
			if code != exitError || took > 15*time.Second || !strings.Contains(stderr, "Authentication failed") {
				t.Errorf("%v with a wrong password: exit %d after %v, want %d within 15s and an error saying so; stderr:\n%s",
					args, code, took, exitError, tail(stderr))
			}
			t.Logf("%v with a wrong password: exit %d after %v: %s", args, code, took.Round(10*time.Millisecond), lastLine(stderr))
		}
	})

	t.Run("certificates refused", func(t *testing.T) {
		ssl, ca := s.get(t, "SSL"), s.get(t, "CA")
		for _, tc := range []struct {
			name  string
			flags []string
			want  string
		}{
			{"no client certificate", []string{"-b", ssl, "--tls", "--tls-ca", ca}, "remote error: tls"},
			{"the broker's CA not trusted", []string{"-b", ssl, "--tls", "--tls-cert", s.get(t, "CLIENT_CERT"), "--tls-key", s.get(t, "CLIENT_KEY")}, "certificate signed by unknown authority"},
		} {
			for _, args := range [][]string{
				{"topics", "list"},
				{"run", "copy", "--input", run + "-x", "--output", run + "-y", "--app-id", run + "-app", "--instance-id", "r1", "--state-dir", t.TempDir()},
			} {
				start := time.Now()
				rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				code, _, stderr := tr.onceflow(t, rctx, nil, append(args, tc.flags...)...)
				cancel()
				took := time.Since(start)
				if code != exitError || took > 15*time.Second || !strings.Contains(stderr, tc.want) {
					t.Errorf("%v, %s: exit %d after %v, want %d within 15s and %q; stderr:\n%s", args, tc.name, code, took, exitError, tc.want, tail(stderr))
				}
				t.Logf("%v, %s: exit %d after %v: %s", args, tc.name, code, took.Round(10*time.Millisecond), lastLine(stderr))
			}
		}
	})

	broker, err := os.ReadFile(filepath.Join(s.dir, "broker", "broker.log"))
	if err != nil {
		t.Fatal(err)
	}
	out := tr.String()
	if len(out) < 10000 || !strings.Contains(out, "[DEBUG]") && !strings.Contains(out, `"@level":"debug"`) {
		t.Fatalf("the transcript (%d bytes) has no debug logs: the check below would prove nothing", len(out))
	}
	for name, text := range map[string]string{"the commands' output": out, "the broker's log": string(broker)} {
		for _, pw := range []string{secret, wrong} {
			if i := strings.Index(text, pw); i >= 0 {
				t.Errorf("a password appears in %s: %q", name, text[max(0, i-200):i])
			}
		}
	}
	if !t.Failed() {
		t.Logf("checked %d bytes of output (debug level) and %d bytes of broker log: no password in them", len(out), len(broker))
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestSecurityToolingACLs runs each tooling command as a principal that
// has only the ACLs docs/security.md lists for it.
func TestSecurityToolingACLs(t *testing.T) {
	s := loadSecure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tr := &transcript{}
	run := fmt.Sprintf("tool%d", time.Now().UnixNano()%1_000_000)
	adminFlags, adminEnv := s.adminFlags(t)
	in, out, app := run+"-in", run+"-out", run+"-app"
	// As admin: an input, and a copy of it by a replica (the output, the
	// group's offsets, the app's internal topics).
	if code, o, e := tr.onceflow(t, ctx, adminEnv, append([]string{"produce", "-t", in, "-n", "100", "--partitions", "2", "--no-progress"}, adminFlags...)...); code != 0 {
		t.Fatalf("produce as admin: exit %d: %s %s", code, o, e)
	}
	r := tr.start(t, ctx, adminEnv, append([]string{"run", "copy", "--input", in, "--output", out, "--app-id", app, "--instance-id", "r1",
		"--state-dir", t.TempDir()}, adminFlags...)...)
	if code, o, e := tr.onceflow(t, ctx, adminEnv, append([]string{"lag", "-g", app, "-t", in, "--wait", "90s"}, adminFlags...)...); code != 0 {
		t.Fatalf("lag as admin: exit %d: %s %s", code, o, e)
	}
	tr.stop(t, r)

	prefixed := func(b *kadm.ACLBuilder) *kadm.ACLBuilder { return b.ResourcePatternType(kadm.ACLPatternPrefixed) }
	for i, tc := range []struct {
		name string
		acls func(p string) []*kadm.ACLBuilder
		args []string
		want string // on stdout
	}{
		{"produce", func(p string) []*kadm.ACLBuilder {
			return []*kadm.ACLBuilder{kadm.NewACLs().Allow(p).Topics(run+"-new").Operations(kadm.OpWrite, kadm.OpCreate)}
		}, []string{"produce", "-t", run + "-new", "-n", "10", "--no-progress"}, "produced 10 records"},
		{"verify", func(p string) []*kadm.ACLBuilder {
			return []*kadm.ACLBuilder{kadm.NewACLs().Allow(p).Topics(in, out).Operations(kadm.OpRead)}
		}, []string{"verify", "-i", in, "-o", out}, "input 100, output 100, rejections 0: with output 100, rejected only 0, missing 0, doubled 0, unexpected 0: ok"},
		{"lag", func(p string) []*kadm.ACLBuilder {
			return []*kadm.ACLBuilder{kadm.NewACLs().Allow(p).Groups(app).Operations(kadm.OpDescribe),
				kadm.NewACLs().Allow(p).Topics(in).Operations(kadm.OpDescribe)}
		}, []string{"lag", "-g", app, "-t", in}, "committed 100 of 100"},
		{"topics list", func(p string) []*kadm.ACLBuilder {
			return []*kadm.ACLBuilder{kadm.NewACLs().Allow(p).Topics(in).Operations(kadm.OpDescribe)}
		}, []string{"topics", "list"}, in},
		{"topics describe", func(p string) []*kadm.ACLBuilder {
			return []*kadm.ACLBuilder{kadm.NewACLs().Allow(p).Topics(in).Operations(kadm.OpDescribe, kadm.OpDescribeConfigs)}
		}, []string{"topics", "describe", in}, in},
		{"topics create", func(p string) []*kadm.ACLBuilder {
			return []*kadm.ACLBuilder{kadm.NewACLs().Allow(p).Topics(run + "-created").Operations(kadm.OpCreate)}
		}, []string{"topics", "create", run + "-created"}, ""},
		{"sinks status", func(p string) []*kadm.ACLBuilder {
			return []*kadm.ACLBuilder{prefixed(kadm.NewACLs().Allow(p).Topics(app + "-").Operations(kadm.OpRead))}
		}, []string{"sinks", "status", "--app-id", app}, "no sinks of " + app},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, password := fmt.Sprintf("%s-u%d", run, i), fmt.Sprintf("pw-%s-%d", run, i)
			s.addSCRAMUser(t, ctx, user, password)
			for _, b := range tc.acls("User:" + user) {
				s.allow(t, ctx, b)
			}
			code, stdout, stderr := tr.onceflow(t, ctx, []string{"ONCEFLOW_SASL_PASSWORD=" + password}, append(tc.args,
				"-b", s.get(t, "SASL_PLAINTEXT"), "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", user)...)
			if code != 0 || !strings.Contains(stdout, tc.want) {
				t.Errorf("%v with its documented ACLs only: exit %d, stdout %q, stderr:\n%s", tc.args, code, stdout, tail(stderr))
			}
		})
	}
}
