package benchmarks

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	franzpeer "github.com/onceflow/onceflow/benchmarks/peers/franz"
	saramapeer "github.com/onceflow/onceflow/benchmarks/peers/sarama"
)

// saramaVariant is the floor: sarama's transactional copy loop.
type saramaVariant struct{}

func (saramaVariant) Name() string         { return "sarama" }
func (saramaVariant) ExactlyOnce() bool    { return true }
func (saramaVariant) Available(*Env) error { return nil }

func (saramaVariant) Start(ctx context.Context, spec RunSpec) (Running, error) {
	return startCopiers(ctx, spec, func(instance string) (*saramapeer.Copier, error) {
		return saramapeer.New(saramapeer.Config{Brokers: spec.Env.Brokers, Group: spec.App,
			InstanceID: instance, Input: spec.Input, Output: spec.Output, CommitInterval: spec.CommitInterval})
	}, func(c *saramapeer.Copier) copierStats {
		s := c.Stats()
		return copierStats{s.CommitLatencies, s.Records, s.Transactions}
	})
}

// franzVariant is franz-go's GroupTransactSession copy loop.
type franzVariant struct{}

func (franzVariant) Name() string         { return "franz" }
func (franzVariant) ExactlyOnce() bool    { return true }
func (franzVariant) Available(*Env) error { return nil }

func (franzVariant) Start(ctx context.Context, spec RunSpec) (Running, error) {
	return startCopiers(ctx, spec, func(instance string) (*franzpeer.Copier, error) {
		return franzpeer.New(franzpeer.Config{Brokers: spec.Env.Brokers, Group: spec.App,
			InstanceID: instance, Input: spec.Input, Output: spec.Output, CommitInterval: spec.CommitInterval})
	}, func(c *franzpeer.Copier) copierStats {
		s := c.Stats()
		return copierStats{s.CommitLatencies, s.Records, s.Transactions}
	})
}

// copierStats is what the harness reads of a Go peer's copy loop.
type copierStats struct {
	latencies    []time.Duration
	records, txn int64
}

// startCopiers runs spec.Replicas × spec.Threads copy loops of one Go
// peer, instances r1, r2, ..., and sums their transaction figures.
func startCopiers[C interface{ Run(context.Context) error }](ctx context.Context, spec RunSpec,
	newCopier func(instance string) (C, error), stats func(C) copierStats) (Running, error) {
	ctx, cancel := context.WithCancel(ctx)
	r := &goRunning{cancel: cancel, done: make(chan struct{})}
	var copiers []C
	for i := range spec.Replicas * max(spec.Threads, 1) {
		c, err := newCopier(fmt.Sprintf("r%d", i+1))
		if err != nil {
			cancel()
			return nil, err
		}
		copiers = append(copiers, c)
	}
	r.stats = func() TxnStats {
		var lat []time.Duration
		var recs, txns int64
		for _, c := range copiers {
			s := stats(c)
			lat = append(lat, s.latencies...)
			recs += s.records
			txns += s.txn
		}
		return txnStats(lat, recs, txns)
	}
	for _, c := range copiers {
		r.goRun(ctx, c.Run)
	}
	return r, nil
}

// txnStats summarises measured commit latencies.
func txnStats(lat []time.Duration, records, txns int64) TxnStats {
	s := TxnStats{Transactions: txns}
	if len(lat) > 0 {
		var sum time.Duration
		for _, l := range lat {
			sum += l
		}
		s.CommitMeanMs = ms(sum) / float64(len(lat))
		s.CommitP50Ms = ms(Percentile(lat, 0.5))
		s.CommitP99Ms = ms(Percentile(lat, 0.99))
	}
	if txns > 0 {
		s.RecordsPerTxn = float64(records) / float64(txns)
	}
	return s
}

// kstreamsVariant is Kafka Streams (Java), built with Maven from
// benchmarks/peers/kstreams/ and run as one process per replica.
type kstreamsVariant struct{ exactlyOnce bool }

// KStreamsDir is where the Kafka Streams peer lives, under the root.
const KStreamsDir = "benchmarks/peers/kstreams"

func (v kstreamsVariant) Name() string {
	if v.exactlyOnce {
		return "kstreams_eos"
	}
	return "kstreams_alos"
}

func (v kstreamsVariant) ExactlyOnce() bool { return v.exactlyOnce }

func (v kstreamsVariant) guarantee() string {
	if v.exactlyOnce {
		return "exactly_once_v2"
	}
	return "at_least_once"
}

func (kstreamsVariant) Available(env *Env) error {
	if env.Embedded {
		return errors.New("the Kafka Streams peer runs only against real Kafka: give --brokers")
	}
	return env.kstreams()
}

// kstreams finds or builds the jar, once per bench.
func (env *Env) kstreams() error {
	env.kstreamsOnce.Do(func() {
		if env.kstreamsJar != "" {
			if _, err := os.Stat(env.kstreamsJar); err != nil {
				env.kstreamsErr = fmt.Errorf("the Kafka Streams jar: %w", err)
			}
			return
		}
		if err := checkJava17(); err != nil {
			env.kstreamsErr = err
			return
		}
		if _, err := exec.LookPath("mvn"); err != nil {
			env.kstreamsErr = errors.New("mvn (Maven) not found: install Debian's maven package")
			return
		}
		script := filepath.Join(env.Root, KStreamsDir, "build.sh")
		if _, err := os.Stat(script); err != nil {
			env.kstreamsErr = fmt.Errorf("%s not found: the Kafka Streams peer is not in this tree", filepath.Join(KStreamsDir, "build.sh"))
			return
		}
		env.Logger.Info("building the Kafka Streams peer", "script", script)
		var out, errb bytes.Buffer
		cmd := exec.Command("bash", script)
		cmd.Dir = env.Root
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			env.kstreamsErr = fmt.Errorf("%s failed: %v: %s", script, err, lastLines(errb.String()+out.String(), 5))
			return
		}
		jar := lastLine(out.String())
		if jar != "" && !filepath.IsAbs(jar) {
			jar = filepath.Join(env.Root, jar)
		}
		if _, err := os.Stat(jar); jar == "" || err != nil {
			env.kstreamsErr = fmt.Errorf("%s did not print an existing jar as its last line (got %q)", script, jar)
			return
		}
		env.kstreamsJar = jar
	})
	return env.kstreamsErr
}

var javaVersion = regexp.MustCompile(`version "(\d+)`)

// checkJava17 checks that java on PATH is Java 17 or newer.
func checkJava17() error {
	out, err := exec.Command("java", "-version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("java not found or not working: %v", err)
	}
	m := javaVersion.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("cannot read the Java version from %q", lastLines(string(out), 1))
	}
	if v, _ := strconv.Atoi(string(m[1])); v < 17 {
		return fmt.Errorf("found Java %d; the Kafka Streams peer needs Java 17", v)
	}
	return nil
}

func lastLine(s string) string {
	var last string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			last = t
		}
	}
	return last
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// args is the java command line of one replica whose state is in dir.
func (v kstreamsVariant) args(spec RunSpec, dir string) []string {
	return []string{"-jar", spec.Env.kstreamsJar,
		"--brokers", strings.Join(spec.Env.Brokers, ","),
		"--app-id", spec.App,
		"--input", spec.Input,
		"--output", spec.Output,
		"--workload", spec.Workload.Name(),
		"--guarantee", v.guarantee(),
		"--commit-interval-ms", strconv.FormatInt(spec.CommitInterval.Milliseconds(), 10),
		"--state-dir", dir,
		"--threads", strconv.Itoa(max(spec.Threads, 1)), // num.stream.threads
	}
}

func (v kstreamsVariant) Start(ctx context.Context, spec RunSpec) (Running, error) {
	r := &procRunning{done: make(chan struct{})}
	for i := range spec.Replicas {
		dir := filepath.Join(spec.StateDir, fmt.Sprintf("r%d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			r.Stop()
			return nil, err
		}
		logf, err := os.Create(filepath.Join(spec.StateDir, fmt.Sprintf("kstreams-r%d.log", i+1)))
		if err != nil {
			r.Stop()
			return nil, err
		}
		cmd := exec.Command("java", v.args(spec, dir)...)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			logf.Close()
			r.Stop()
			return nil, fmt.Errorf("start Kafka Streams: %w", err)
		}
		r.add(cmd, logf)
	}
	return r, nil
}

// procRunning runs replicas as child processes.
type procRunning struct {
	mu      sync.Mutex
	cmds    []*exec.Cmd
	logs    []*os.File
	exited  []chan struct{}
	errs    []error
	stopped bool
	done    chan struct{}
	once    sync.Once
}

func (r *procRunning) add(cmd *exec.Cmd, logf *os.File) {
	exited := make(chan struct{})
	r.mu.Lock()
	i := len(r.cmds)
	r.cmds = append(r.cmds, cmd)
	r.logs = append(r.logs, logf)
	r.exited = append(r.exited, exited)
	r.errs = append(r.errs, nil)
	r.mu.Unlock()
	go func() {
		err := cmd.Wait()
		r.mu.Lock()
		stopped := r.stopped
		if !stopped {
			r.errs[i] = fmt.Errorf("%s exited by itself: %v (log %s)", filepath.Base(cmd.Path), err, logf.Name())
		}
		r.mu.Unlock()
		close(exited)
		if !stopped {
			r.once.Do(func() { close(r.done) })
		}
	}()
}

func (r *procRunning) Done() <-chan struct{} { return r.done }

func (r *procRunning) Pids() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	pids := make([]int, 0, len(r.cmds))
	for _, c := range r.cmds {
		pids = append(pids, c.Process.Pid)
	}
	return pids
}

// Stop sends SIGTERM (a clean close: commit, leave), waits up to 30 s,
// then kills.
func (r *procRunning) Stop() error {
	r.mu.Lock()
	r.stopped = true
	cmds, exited := r.cmds, r.exited
	r.mu.Unlock()
	for _, c := range cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(30 * time.Second)
	for i, ch := range exited {
		select {
		case <-ch:
		case <-deadline:
			_ = cmds[i].Process.Kill()
			<-ch
		}
	}
	for _, l := range r.logs {
		l.Close()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}
