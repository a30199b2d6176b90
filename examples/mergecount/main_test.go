package main

// The replicas of these tests are processes (the test binary run again as
// the command), so that one can be killed with SIGKILL. The test itself is
// the outside world: it creates the topics, writes the input and reads the
// output read_committed, with franz-go and kcat, clients of its own.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// replicaArgs, set in a process's environment, makes the test binary run
// as one replica of the command with these flags (separated by newlines).
const replicaArgs = "MERGECOUNT_REPLICA_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(replicaArgs); ok {
		var o options
		fs := flag.NewFlagSet("mergecount", flag.ExitOnError)
		o.flags(fs)
		fs.Parse(strings.Split(args, "\n"))
		ctx, stop := signalContext()
		err := run(ctx, o)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "replica:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Every key's count over both topics is exact with one replica that runs
// throughout: the happy path, in a few seconds. (Replicas added and
// killed mid-run, TestMergeCountReplicasAddedAndKilled, take a minute:
// make test-long runs them.)
func TestMergeCountOneReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a replica as a process")
	}
	brokers := embeddedBroker(t)
	prefix := fmt.Sprintf("mergecount-one-%d", time.Now().UnixNano()%1e9)
	a, b, out, app := prefix+"-ma", prefix+"-mb", prefix+"-out", prefix+"-app"
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, topic := range []string{a, b} {
		if resp, err := adm.CreateTopic(ctx, partitions, -1, nil, topic); err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp.Err)
		}
	}
	r := startReplica(t, options{brokers: strings.Join(brokers, ","), app: app, instance: "r1", a: a, b: b, out: out,
		stateDir: t.TempDir(), session: 6 * time.Second})
	waitStable(t, adm, app, 1)
	for c := range chunks {
		produceChunk(t, cl, c, a, b)
	}
	total := 2 * keys * perKey
	waitOutput(t, brokers, out, total, 2*time.Minute)
	r.stop(t)
	checkCounts(t, "franz-go", readCounts(t, brokers, out), total)
}

func mergeCountRuns(t *testing.T, brokers []string) {
	for _, initial := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d replicas", initial), func(t *testing.T) { mergeCountRun(t, brokers, initial) })
	}
}

// embeddedBroker starts an embedded broker (kfake, as `onceflow broker`
// does) for the test.
func embeddedBroker(t *testing.T) []string {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(6),
		kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "900000"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

const (
	keys       = 60
	perKey     = 50 // records of each key in each topic
	partitions = 6
	chunks     = 10 // the input is written in this many steps
)

// mergeCountRun starts initial replicas, writes the input in chunks,
// adds a replica after the third chunk and kills the first after the
// sixth, and checks every key's counts read back read_committed.
func mergeCountRun(t *testing.T, brokers []string, initial int) {
	prefix := fmt.Sprintf("mergecount-%d-%d", initial, time.Now().UnixNano()%1e9)
	a, b, out, app := prefix+"-ma", prefix+"-mb", prefix+"-out", prefix+"-app"
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, topic := range []string{a, b} {
		if resp, err := adm.CreateTopic(ctx, partitions, -1, nil, topic); err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp.Err)
		}
	}
	// A real broker answers before its metadata shows the topics.
	for {
		md, err := adm.Metadata(ctx, a, b)
		if err == nil && len(md.Topics[a].Partitions) == partitions && len(md.Topics[b].Partitions) == partitions {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("topics %s and %s not in the metadata", a, b)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var replicas []*replica
	start := func(id string) *replica {
		r := startReplica(t, options{brokers: strings.Join(brokers, ","), app: app, instance: id, a: a, b: b, out: out,
			stateDir: t.TempDir(), session: 6 * time.Second})
		replicas = append(replicas, r)
		return r
	}
	for i := range initial {
		start(fmt.Sprintf("r%d", i+1))
	}
	waitStable(t, adm, app, initial)
	for c := range chunks {
		produceChunk(t, cl, c, a, b)
		switch c {
		case 2:
			start(fmt.Sprintf("r%d", initial+1))
			waitStable(t, adm, app, initial+1)
		case 5:
			replicas[0].kill(t)
		}
		time.Sleep(100 * time.Millisecond) // the chunks' pace, spread over the group's changes
	}
	total := 2 * keys * perKey
	waitOutput(t, brokers, out, total, 4*time.Minute)
	for _, r := range replicas[1:] {
		r.stop(t)
	}

	got := readCounts(t, brokers, out)
	checkCounts(t, "franz-go", got, total)
	if kcat, err := exec.LookPath("kcat"); err == nil {
		checkCounts(t, "kcat", readCountsKcat(t, kcat, brokers, out), total)
	} else {
		t.Log("kcat not installed: read back with franz-go only")
	}
}

// produceChunk writes chunk c of both topics: perKey/chunks records of
// every key to each.
func produceChunk(t *testing.T, cl *kgo.Client, c int, topics ...string) {
	t.Helper()
	per := perKey / chunks
	var rs []*kgo.Record
	for _, topic := range topics {
		for i := c * per * keys; i < (c+1)*per*keys; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k-%02d", i%keys), Value: fmt.Appendf(nil, "%s-%d", topic, i)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// checkCounts asserts that every key's counts are 1, 2, ... 2*perKey, each
// once and in order: nothing lost, nothing counted twice, no task split.
func checkCounts(t *testing.T, reader string, got map[string][]int64, total int) {
	t.Helper()
	var n int
	var wrong []string
	for k := range keys {
		key := fmt.Sprintf("k-%02d", k)
		cs := got[key]
		n += len(cs)
		want := make([]int64, 2*perKey)
		for i := range want {
			want[i] = int64(i + 1)
		}
		if !slices.Equal(cs, want) {
			last := int64(0)
			if len(cs) > 0 {
				last = cs[len(cs)-1]
			}
			wrong = append(wrong, fmt.Sprintf("%s: %d counts, last %d", key, len(cs), last))
		}
	}
	t.Logf("%s read %d counts read_committed for %d keys; %d keys wrong", reader, n, len(got), len(wrong))
	if n != total || len(got) != keys || len(wrong) > 0 {
		t.Errorf("%s: %d counts of %d keys, want %d of %d; wrong: %v", reader, n, len(got), total, keys, wrong)
	}
}

// readCounts reads out read_committed from the start until it has been
// quiet for two seconds, every key's counts in order.
func readCounts(t *testing.T, brokers []string, out string) map[string][]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(out), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string][]int64{}
	deadline := time.Now().Add(2 * time.Minute)
	for quiet := 0; quiet < 2 && time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if fs.NumRecords() == 0 {
			quiet++
			continue
		}
		quiet = 0
		fs.EachRecord(func(r *kgo.Record) {
			n, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				t.Errorf("%s[%d]@%d: value %q is not a count", out, r.Partition, r.Offset, r.Value)
			}
			got[string(r.Key)] = append(got[string(r.Key)], n)
		})
	}
	return got
}

// readCountsKcat reads out with kcat (librdkafka) read_committed.
func readCountsKcat(t *testing.T, kcat string, brokers []string, out string) map[string][]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-C", "-b", strings.Join(brokers, ","), "-t", out,
		"-X", "isolation.level=read_committed", "-o", "beginning", "-e", "-q", "-f", "%k %s\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat: %v: %s", err, stderr.String())
	}
	got := map[string][]int64{}
	for _, line := range strings.Split(strings.TrimSuffix(string(stdout), "\n"), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Errorf("kcat line %q is not a key and a count", line)
		}
		got[k] = append(got[k], n)
	}
	return got
}

// waitOutput waits until out holds at least n records read_committed.
func waitOutput(t *testing.T, brokers []string, out string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	got := 0
	for time.Now().Before(deadline) {
		got = 0
		for _, cs := range readCounts(t, brokers, out) {
			got += len(cs)
		}
		if got >= n {
			return
		}
	}
	t.Fatalf("%s: %d records read_committed after %v, want at least %d", out, got, within, n)
}

// waitStable waits until the group is stable with n members.
func waitStable(t *testing.T, adm *kadm.Client, group string, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		gs, err := adm.DescribeGroups(ctx, group)
		cancel()
		if err == nil && gs[group].State == "Stable" && len(gs[group].Members) == n {
			logAssignment(t, gs[group])
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("group %s not stable with %d members", group, n)
}

// logAssignment logs what each member of the group was assigned, and
// fails the test when a member holds partition p of one input without p
// of the other.
func logAssignment(t *testing.T, g kadm.DescribedGroup) {
	t.Helper()
	for _, m := range g.Members {
		as, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		var parts [][]int32
		var desc []string
		for _, tp := range as.Topics {
			ps := slices.Sorted(slices.Values(tp.Partitions))
			parts = append(parts, ps)
			desc = append(desc, fmt.Sprintf("%s%v", tp.Topic[strings.LastIndex(tp.Topic, "-")+1:], ps))
		}
		slices.Sort(desc)
		t.Logf("%s holds %s", *m.InstanceID, strings.Join(desc, " "))
		if len(parts) == 1 || len(parts) == 2 && !slices.Equal(parts[0], parts[1]) {
			t.Errorf("%s holds part of a task: %s", *m.InstanceID, strings.Join(desc, " "))
		}
	}
}

// replica is one replica process.
type replica struct {
	id   string
	cmd  *exec.Cmd
	log  string
	done chan error
}

func startReplica(t *testing.T, o options) *replica {
	t.Helper()
	args := []string{"-brokers", o.brokers, "-app", o.app, "-instance", o.instance, "-a", o.a, "-b", o.b, "-out", o.out,
		"-state-dir", o.stateDir, "-session-timeout", o.session.String()}
	r := &replica{id: o.instance, log: filepath.Join(t.TempDir(), o.instance+".log"), done: make(chan error, 1)}
	logf, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(os.Args[0], "-test.run=^$")
	r.cmd.Env = append(os.Environ(), replicaArgs+"="+strings.Join(args, "\n"))
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.done <- r.cmd.Wait()
		logf.Close()
	}()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(r.log)
			t.Logf("%s's log:\n%s", r.id, tail(string(b), 40))
		}
	})
	t.Logf("started %s (pid %d)", r.id, r.cmd.Process.Pid)
	return r
}

// kill kills the replica with SIGKILL: no commit, no abort, no leave.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-r.done
	t.Logf("killed %s with SIGKILL", r.id)
}

// stop stops the replica with SIGTERM and fails the test unless it exits
// cleanly.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("%s: %v", r.id, err)
		}
	case <-time.After(time.Minute):
		t.Errorf("%s did not stop within a minute of SIGTERM", r.id)
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
