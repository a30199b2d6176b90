package embedded_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
)

// The crash tests run the broker in a child process (this test binary run
// again with childDirEnv set) so that it can be killed with SIGKILL, as a
// user's `onceflow broker --data-dir D` would be.
const (
	childDirEnv  = "ONCEFLOW_TEST_BROKER_DIR"
	childAddrEnv = "ONCEFLOW_TEST_BROKER_ADDR"
	childWipeEnv = "ONCEFLOW_TEST_BROKER_WIPE"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		os.Exit(runChildBroker(dir, os.Getenv(childAddrEnv), os.Getenv(childWipeEnv) != ""))
	}
	os.Exit(m.Run())
}

// runChildBroker is the child process: it starts a broker on dir, prints
// "ready", and closes the broker cleanly on SIGTERM.
func runChildBroker(dir, addr string, wipe bool) int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	b, err := embedded.Start(embedded.Config{Addr: addr, DataDir: dir, WipeUncleanDataDir: wipe})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Println("ready")
	<-sig
	b.Close()
	return 0
}

// childBroker is a broker running in a child process.
type childBroker struct {
	cmd    *exec.Cmd
	done   chan struct{}
	stderr strings.Builder
}

// startChild starts a broker process on dir at addr and waits until it is
// ready. When the broker refuses to start, it returns its error text.
func startChild(t *testing.T, dir, addr string, wipe bool) (*childBroker, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir, childAddrEnv+"="+addr)
	if wipe {
		cmd.Env = append(cmd.Env, childWipeEnv+"=1")
	}
	c := &childBroker{cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &c.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- strings.TrimSpace(line) == "ready"
		cmd.Wait()
		close(c.done)
	}()
	select {
	case ok := <-ready:
		if !ok {
			<-c.done
			return nil, errors.New(strings.TrimSpace(c.stderr.String()))
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-c.done
		t.Fatalf("broker did not start within 30s: %s", c.stderr.String())
	}
	t.Cleanup(c.kill)
	return c, nil
}

// kill stops the broker with SIGKILL: no chance to persist anything.
func (c *childBroker) kill() {
	select {
	case <-c.done:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// stop stops the broker cleanly (SIGTERM: Close persists its state).
func (c *childBroker) stop(t *testing.T) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.kill()
		t.Fatal("broker did not stop within 30s of SIGTERM")
	}
	if code := c.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("broker exited with %d: %s", code, c.stderr.String())
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

const (
	crashIn    = "crash-in"
	crashOut   = "crash-out"
	crashGroup = "crash-copy"
)

// copier is a transactional copy of crashIn to crashOut: one consumer
// group member and its transactional producer (KIP-447), driven step by
// step by the test so the broker can be killed with a transaction open.
type copier struct {
	t    *testing.T
	addr string
	s    *kgo.GroupTransactSession
}

func (c *copier) session() *kgo.GroupTransactSession {
	if c.s == nil {
		s, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(c.addr),
			kgo.TransactionalID("crash-copy-1"),
			kgo.TransactionTimeout(5*time.Second),
			kgo.ConsumerGroup(crashGroup),
			kgo.ConsumeTopics(crashIn),
			kgo.SessionTimeout(3*time.Second),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RetryTimeout(5*time.Second),
		)
		if err != nil {
			c.t.Fatal(err)
		}
		c.s = s
	}
	return c.s
}

// drop closes the session after a failure; the next step creates it again
// with the same transactional id, which aborts what it left open.
func (c *copier) drop() {
	if c.s != nil {
		c.s.Close()
		c.s = nil
	}
}

// begin polls up to n records, begins a transaction and produces their
// copies. It returns false when the step failed (the session is dropped).
func (c *copier) begin(ctx context.Context, n int) bool {
	s := c.session()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	fs := s.PollRecords(pctx, n)
	if fs.IsClientClosed() {
		return false
	}
	if err := s.Begin(); err != nil {
		c.t.Logf("begin: %v", err)
		c.drop()
		return false
	}
	var recs []*kgo.Record
	fs.EachRecord(func(r *kgo.Record) {
		recs = append(recs, &kgo.Record{Topic: crashOut, Partition: r.Partition, Key: r.Key, Value: r.Value})
	})
	if err := s.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		c.t.Logf("produce: %v", err)
	}
	return true
}

// end commits (or, after a failed produce, aborts) the open transaction.
func (c *copier) end(ctx context.Context) {
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.s.End(ectx, kgo.TryCommit); err != nil {
		c.t.Logf("end: %v", err)
		c.drop()
	}
}

// copyUntil runs transactions of up to 20 records until the group has
// committed at least target input offsets.
func (c *copier) copyUntil(ctx context.Context, adm *kadm.Client, target int) {
	for {
		n, err := committedInput(ctx, adm)
		if err != nil {
			c.t.Logf("committed offsets: %v", err)
		}
		if n >= target {
			return
		}
		if ctx.Err() != nil {
			c.t.Fatalf("copy stalled at %d of %d committed inputs: %v", n, target, ctx.Err())
		}
		if c.begin(ctx, 20) {
			c.end(ctx)
		}
	}
}

func committedInput(ctx context.Context, adm *kadm.Client) (int, error) {
	resp, err := adm.FetchOffsets(ctx, crashGroup)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range resp[crashIn] {
		n += int(max(o.At, 0))
	}
	return n, nil
}

// produceInput writes n records with unique values to crashIn.
func produceInput(ctx context.Context, t *testing.T, addr string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(ctx, 3, 1, nil, crashIn, crashOut); err != nil {
		t.Fatal(err)
	}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: crashIn, Value: []byte(strconv.Itoa(i))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// readOutput reads crashOut read_committed to its end and returns how many
// times each value was seen. It fails the test when a partition's last
// stable offset stays behind its end (a transaction left hanging).
func readOutput(ctx context.Context, t *testing.T, addr string) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(crashOut),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(15 * time.Second)
	var stable, ends kadm.ListedOffsets
	for {
		ends, err = adm.ListEndOffsets(ctx, crashOut)
		if err == nil {
			stable, err = adm.ListCommittedOffsets(ctx, crashOut)
		}
		if err == nil && equalOffsets(stable, ends) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("output: last stable offsets %v stay behind end offsets %v (%v): a transaction was left open", offsetsOf(stable), offsetsOf(ends), err)
		}
		time.Sleep(100 * time.Millisecond) // the broker's transaction timeout would end an open one
	}
	seen := map[string]int{}
	pos := map[int32]int64{}
	for !reached(pos, ends) {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fs := cl.PollFetches(pctx)
		stalled := pctx.Err() != nil
		cancel()
		if stalled {
			t.Errorf("output: read_committed reader stalled at offsets %v of %v, %d records read", pos, offsetsOf(ends), len(seen))
			return seen
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			pos[r.Partition] = r.Offset + 1
		})
		// Positions past trailing control records and aborted data.
		for p, o := range cl.MarkedOffsets()[crashOut] {
			pos[p] = max(pos[p], o.Offset)
		}
		for _, ft := range fs {
			for _, tp := range ft.Topics {
				for _, fp := range tp.Partitions {
					pos[fp.Partition] = max(pos[fp.Partition], fp.LastStableOffset)
				}
			}
		}
	}
	return seen
}

func equalOffsets(a, b kadm.ListedOffsets) bool {
	for t, ps := range b {
		for p, o := range ps {
			if a[t][p].Offset != o.Offset {
				return false
			}
		}
	}
	return len(b) > 0
}

func offsetsOf(l kadm.ListedOffsets) map[int32]int64 {
	m := map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) { m[o.Partition] = o.Offset })
	return m
}

func reached(pos map[int32]int64, ends kadm.ListedOffsets) bool {
	for p, o := range ends[crashOut] {
		if pos[p] < o.Offset {
			return false
		}
	}
	return true
}

// TestUncleanStopRefused kills the broker with SIGKILL while a copy
// transaction is open and starts it again on the same data dir. kfake's
// crash recovery leaves that transaction's records without an abort
// marker (and its producer and sequence state from the last clean stop),
// so a later restart can make them visible or leave outputs of committed
// inputs unreadable: the broker must refuse the data dir with a clear
// message. With WipeUncleanDataDir it starts empty.
func TestUncleanStopRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, addr := t.TempDir(), freeAddr(t)
	const records = 600
	b, err := startChild(t, dir, addr, false)
	if err != nil {
		t.Fatal(err)
	}
	produceInput(ctx, t, addr, records)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cp := &copier{t: t, addr: addr}
	defer cp.drop()

	// A clean stop and start in the middle of the stream keeps everything.
	cp.copyUntil(ctx, adm, records/4)
	b.stop(t)
	if b, err = startChild(t, dir, addr, false); err != nil {
		t.Fatalf("restart after a clean stop: %v", err)
	}
	cp.copyUntil(ctx, adm, records/2)

	// Crash with a transaction open: its records are on disk, uncommitted.
	for crash := 1; crash <= 2; crash++ {
		if !cp.begin(ctx, 20) {
			t.Fatal("could not open a transaction before the crash")
		}
		b.kill()
		b, err = startChild(t, dir, addr, false)
		if err != nil {
			if !strings.Contains(err.Error(), "not stopped cleanly") || !strings.Contains(err.Error(), "--wipe-unclean-data-dir") {
				t.Fatalf("restart after SIGKILL refused with an unclear message: %v", err)
			}
			t.Logf("restart after SIGKILL refused: %v", err)
			refusedThenWiped(ctx, t, dir, addr)
			return
		}
		cp.end(ctx)
		cp.copyUntil(ctx, adm, records/2+crash*records/8)
	}
	// The broker accepted the data dir after two crashes: then it must
	// have recovered exactly.
	cp.copyUntil(ctx, adm, records)
	cp.drop()
	b.stop(t)
	if _, err = startChild(t, dir, addr, false); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, readOutput(ctx, t, addr), records, "after two crashes and a clean restart")
}

// checkOutput fails the test unless every input value was read exactly
// once.
func checkOutput(t *testing.T, seen map[string]int, records int, when string) {
	t.Helper()
	missing, doubled := 0, 0
	for i := range records {
		switch n := seen[strconv.Itoa(i)]; {
		case n == 0:
			missing++
		case n > 1:
			doubled += n - 1
		}
	}
	if missing != 0 || doubled != 0 || len(seen) != records {
		t.Fatalf("%s: %d inputs committed, %d distinct outputs read_committed, %d missing, %d doubled",
			when, records, len(seen), missing, doubled)
	}
	t.Logf("%s: %d inputs, %d outputs read_committed, each once", when, records, len(seen))
}

// TestCleanRestartKeepsTransactions stops the broker cleanly (SIGTERM)
// while a copy transaction is open and starts it on the same data dir:
// the transaction commits after the restart, and the output read
// read_committed equals the input.
func TestCleanRestartKeepsTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, addr := t.TempDir(), freeAddr(t)
	const records = 600
	b, err := startChild(t, dir, addr, false)
	if err != nil {
		t.Fatal(err)
	}
	produceInput(ctx, t, addr, records)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cp := &copier{t: t, addr: addr}
	defer cp.drop()
	for _, at := range []int{records / 4, records / 2} {
		cp.copyUntil(ctx, adm, at)
		if !cp.begin(ctx, 20) {
			t.Fatal("could not open a transaction before the stop")
		}
		b.stop(t)
		if b, err = startChild(t, dir, addr, false); err != nil {
			t.Fatalf("restart after a clean stop: %v", err)
		}
		cp.end(ctx)
	}
	cp.copyUntil(ctx, adm, records)
	cp.drop()
	checkOutput(t, readOutput(ctx, t, addr), records, "after two clean restarts with a transaction open")
}

// refusedThenWiped checks that a refused data dir can be started again
// with WipeUncleanDataDir, empty.
func refusedThenWiped(ctx context.Context, t *testing.T, dir, addr string) {
	t.Helper()
	if _, err := startChild(t, dir, addr, false); err == nil {
		t.Fatal("second start after SIGKILL was accepted: the refusal must hold until the dir is wiped")
	}
	if _, err := startChild(t, dir, addr, true); err != nil {
		t.Fatalf("start with WipeUncleanDataDir: %v", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has(crashIn) || topics.Has(crashOut) {
		t.Fatalf("after the wipe the broker still has topics %v", topics.Names())
	}
}
