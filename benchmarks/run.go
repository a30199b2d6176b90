package benchmarks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/schollz/progressbar/v3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/processor"
)

// pollEvery is how often a run reads the group's committed offsets: the
// resolution of its time window.
const pollEvery = 20 * time.Millisecond

// bench is one Run in progress.
type bench struct {
	cfg   Config
	env   *Env
	adm   *kadm.Client
	log   hclog.Logger
	runID string
	seq   int
	bar   *progressbar.ProgressBar
}

// Run runs the whole bench: every sweep point, every variant, in an order
// rotated from repeat to repeat (schedule), and returns the report. A failed run is recorded in the report, not
// returned: the error is for a bench that could not run at all.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	started := time.Now()
	env := &Env{Brokers: cfg.Brokers, Root: cfg.Root, Logger: cfg.Logger, kstreamsJar: cfg.KStreamsJar}
	rep := &Report{Started: started, Partitions: cfg.Partitions, Replicas: cfg.Replicas, Threads: cfg.Threads, Repeats: cfg.Repeats, ColdRecords: cfg.ColdRecords, Machine: machine()}
	if len(env.Brokers) == 0 {
		b, err := embedded.Start(embedded.Config{})
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer b.Close()
		env.Brokers, env.Embedded = b.Addrs(), true
		rep.Broker = "embedded"
		rep.Notes = append(rep.Notes, "embedded broker (kfake) in this process: its CPU time and memory count in the in-process variants' CPU and RSS figures")
	} else {
		rep.Broker = strings.Join(env.Brokers, ",")
	}
	if len(cfg.BrokerPids) > 0 {
		rep.BrokerPids = cfg.BrokerPids
		rep.Notes = append(rep.Notes, fmt.Sprintf("broker CPU: processes %v, counted inside each throughput window (broker CPU s/M rec)", cfg.BrokerPids))
	}
	cl, err := kgo.NewClient(clientcfg.Options(env.Brokers, "onceflow-bench-admin", nil)...)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer cl.Close()
	if err := clientcfg.Probe(ctx, cl, env.Brokers); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	b := &bench{cfg: cfg, env: env, adm: kadm.NewClient(cl), log: cfg.Logger.Named("bench"), runID: newRunID()}

	points := Expand(cfg.Workloads, cfg.CommitIntervals, cfg.ValueSizes)
	type plan struct {
		p        Point
		wl       Workload
		variants []Variant
		skipped  map[string]string
	}
	var plans []plan
	runs := 0
	for _, p := range points {
		wl := workloads[p.Workload]
		pl := plan{p: p, wl: wl}
		candidates := []Variant{onceflowVariant{processor.ExactlyOnce}, onceflowVariant{processor.AtLeastOnce}}
		if cfg.Peers {
			candidates = append(candidates, wl.Peers()...)
		}
		for _, v := range candidates {
			if len(cfg.Variants) > 0 && !slices.Contains(cfg.Variants, v.Name()) {
				continue
			}
			if err := v.Available(env); err != nil {
				if pl.skipped == nil {
					pl.skipped = map[string]string{}
				}
				pl.skipped[v.Name()] = err.Error()
				continue
			}
			pl.variants = append(pl.variants, v)
		}
		phases := 1
		if cfg.Rate >= 0 {
			phases = 2
		}
		runs += phases * cfg.Repeats * len(pl.variants)
		plans = append(plans, pl)
	}
	warmup := cfg.Warmup > 0 && len(plans) > 0 && len(plans[0].variants) > 0
	if warmup {
		runs++
	}
	if cfg.Progress != nil {
		b.bar = progressbar.NewOptions(runs,
			progressbar.OptionSetWriter(cfg.Progress),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(20),
			progressbar.OptionSetItsString("runs"),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(cfg.Progress) }),
		)
		defer b.bar.Exit()
	}

	if warmup {
		// A broker that just started runs its first minute interpreted:
		// the first measured run would pay for its JIT compilation.
		pl := plans[0]
		in, err := inputOf(pl.wl, cfg.Warmup, pl.p.ValueSize, cfg.Partitions)
		if err != nil {
			return nil, err
		}
		m := b.throughputRun(ctx, pl.p, pl.wl, pl.variants[0], in, -1)
		if m.Error != "" {
			b.log.Warn("warm-up run failed; measuring anyway", "error", m.Error)
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("warm-up: one unmeasured %s %s run of %d records before the first measured run", pl.p, pl.variants[0].Name(), cfg.Warmup))
	}
	for _, pl := range plans {
		in, err := inputOf(pl.wl, cfg.Records, pl.p.ValueSize, cfg.Partitions)
		if err != nil {
			return nil, err
		}
		var ms []Measurement
		order := schedule(len(pl.variants), cfg.Repeats)
		for rep, idx := range order {
			for pos, i := range idx {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				m := b.throughputRun(ctx, pl.p, pl.wl, pl.variants[i], in, rep)
				m.Position = pos
				ms = append(ms, m)
			}
		}
		if cfg.Rate >= 0 && !throughputOnly(pl.wl) {
			rate := float64(cfg.Rate)
			if rate == 0 {
				var eos []float64
				for _, m := range ms {
					if m.Variant == "eos" && m.Error == "" {
						eos = append(eos, m.RecordsPerSec)
					}
				}
				rate = Median(eos) / 2
			}
			if rate < 1 {
				rate = 1000
			}
			latIn := in
			if n := max(int(rate*cfg.LatencyWindow.Seconds()), 1000); n < in.Len() {
				if latIn, err = inputOf(pl.wl, n, pl.p.ValueSize, cfg.Partitions); err != nil {
					return nil, err
				}
			}
			for rep, idx := range order {
				for pos, i := range idx {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					m := b.latencyRun(ctx, pl.p, pl.wl, pl.variants[i], latIn, rep, int(rate))
					m.Position = pos
					ms = append(ms, m)
				}
			}
		}
		rep.Sweep = append(rep.Sweep, summarize(pl.p, in.Len(), ms, pl.skipped))
		if cfg.OnPoint != nil {
			cfg.OnPoint(rep)
		}
	}
	short := 0
	for _, r := range rep.Sweep {
		for _, m := range r.Runs {
			if m.WindowFromStart {
				short++
			}
		}
	}
	if short > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d throughput run(s) were too short for their commit interval: too little of the input was committed after the first commit, so their window starts with the variant (start-up included); use more --records", short))
	}
	if len(rep.Sweep) > 0 {
		rep.Result = rep.Sweep[0]
		for _, r := range rep.Sweep {
			if r.CommitIntervalMs == 100 {
				rep.Result = r
				break
			}
		}
	}
	rep.DurationSec = time.Since(started).Seconds()
	return rep, nil
}

func newRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// names gives one run its own app id and topics, all under one prefix.
func (b *bench) names(p Point, v Variant) (prefix, app, in, out string) {
	b.seq++
	prefix = fmt.Sprintf("ofbench-%s-%03d-", b.runID, b.seq)
	app = prefix + p.Workload + "-" + strings.ReplaceAll(v.Name(), "_", "-")
	return prefix, app, app + "-in", app + "-out"
}

func (b *bench) step(p Point, v Variant, phase string, rep int) {
	if b.bar != nil {
		if rep < 0 {
			b.bar.Describe(fmt.Sprintf("%s %s warm-up", p, v.Name()))
			return
		}
		b.bar.Describe(fmt.Sprintf("%s %s %s %d/%d", p, v.Name(), phase, rep+1, b.cfg.Repeats))
	}
}

func (b *bench) done() {
	if b.bar != nil {
		_ = b.bar.Add(1)
	}
}

// createTopics creates the run's input and output topics and waits until
// they are in the metadata with a leader for every partition.
func (b *bench) createTopics(ctx context.Context, topics ...string) error {
	for _, t := range topics {
		if _, err := b.adm.CreateTopic(ctx, int32(b.cfg.Partitions), -1, nil, t); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create %s: %w", t, err)
		}
	}
	for {
		tds, err := b.adm.ListTopics(ctx, topics...)
		ready := err == nil
		for _, t := range topics {
			td, ok := tds[t]
			if !ok || td.Err != nil || len(td.Partitions) != b.cfg.Partitions {
				ready = false
				break
			}
			for _, pd := range td.Partitions {
				if pd.Err != nil || pd.Leader < 0 {
					ready = false
				}
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// cleanup deletes the run's topics (every topic under its prefix: inputs,
// outputs, rejected, changelogs) and its group. It looks again after a
// deletion: a topic a variant created late can be missing from the first
// listing.
func (b *bench) cleanup(prefix, app string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deleted := map[string]bool{}
	for range 3 {
		tds, err := b.adm.ListTopics(ctx)
		if err != nil {
			b.log.Warn("list topics", "error", err)
			break
		}
		var del []string
		for _, t := range tds.Names() {
			if strings.HasPrefix(t, prefix) && !deleted[t] {
				del = append(del, t)
				deleted[t] = true
			}
		}
		if len(del) == 0 {
			break
		}
		resp, err := b.adm.DeleteTopics(ctx, del...)
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			b.log.Warn("delete topics", "topics", del, "error", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
	_, _ = b.adm.DeleteGroups(ctx, app)
}

// sample is one look at a running variant.
type sample struct {
	at        time.Time
	committed int64
	cpu       time.Duration
	brokerCPU time.Duration // of Config.BrokerPids; 0 without them
}

// dirSize is the bytes of the regular files under dir, the Kafka Streams
// replicas' logs (kstreams-r<i>.log) left out: what a variant keeps as
// local state.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), "kstreams-") && strings.HasSuffix(d.Name(), ".log") {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// brokerCPU is the CPU time of the broker's processes (Config.BrokerPids),
// or 0 when none were given.
func (b *bench) brokerCPU() time.Duration {
	if len(b.cfg.BrokerPids) == 0 {
		return 0
	}
	return cpuTime(b.cfg.BrokerPids)
}

// keepOnFailure removes a run's state directory, or keeps it when the run
// failed and says where.
func keepOnFailure(m *Measurement, dir string) {
	if m.Error == "" {
		os.RemoveAll(dir)
	} else {
		m.Error += " (state and logs kept in " + dir + ")"
	}
}

// throughputRun: write the input, start the variant, measure from its
// first committed offset to its last.
func (b *bench) throughputRun(ctx context.Context, p Point, wl Workload, v Variant, in Input, rep int) (m Measurement) {
	b.step(p, v, PhaseThroughput, rep)
	defer b.done()
	m = Measurement{Variant: v.Name(), Phase: PhaseThroughput, Repeat: rep, InputRecords: in.Len()}
	prefix, app, inTopic, outTopic := b.names(p, v)
	defer b.cleanup(prefix, app)
	fail := func(err error) Measurement {
		m.Error = err.Error()
		b.log.Warn("run failed", "point", p.String(), "variant", v.Name(), "phase", m.Phase, "error", err)
		return m
	}
	if err := b.createTopics(ctx, inTopic, outTopic); err != nil {
		return fail(err)
	}
	w, err := newWriter(b.env.Brokers, inTopic, 5*time.Millisecond)
	if err != nil {
		return fail(err)
	}
	_, err = write(ctx, w, in, 0)
	w.Close()
	if err != nil {
		return fail(err)
	}
	total := int64(in.Len())

	dir, err := os.MkdirTemp("", "onceflow-bench-")
	if err != nil {
		return fail(err)
	}
	defer keepOnFailure(&m, dir)
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS(nil)
	stopProfile := b.startProfile(p, v, PhaseThroughput, rep)

	rctx, cancel := context.WithTimeout(ctx, b.cfg.RunTimeout)
	defer cancel()
	began := time.Now()
	cpu0, broker0 := cpuTime(nil), b.brokerCPU()
	running, err := v.Start(rctx, RunSpec{Env: b.env, Workload: wl, App: app, Input: inTopic, Output: outTopic,
		CommitInterval: p.CommitInterval, CommitRecords: b.cfg.CommitRecords, Replicas: b.cfg.Replicas, Threads: b.cfg.Threads, StateDir: dir,
		Logger: b.cfg.Logger.Named(v.Name())})
	if err != nil {
		stopProfile()
		return fail(err)
	}
	pids := running.Pids()
	if pids != nil {
		cpu0 = 0 // a new process: all of its time is the run's
	}
	last := map[int32]int64{}
	var steps []sample // every look that saw the committed offsets move
	var runErr error
	for runErr == nil {
		c, err := committed(rctx, b.adm, app, inTopic, last)
		if err != nil && rctx.Err() == nil {
			b.log.Debug("fetch offsets", "error", err)
		}
		if c > 0 && (len(steps) == 0 || c > steps[len(steps)-1].committed) {
			steps = append(steps, sample{at: time.Now(), committed: c, cpu: cpuTime(pids), brokerCPU: b.brokerCPU()})
		}
		if c >= total {
			break
		}
		select {
		case <-rctx.Done():
			runErr = fmt.Errorf("not caught up within %v: committed %d of %d", b.cfg.RunTimeout, c, total)
		case <-running.Done():
			runErr = errors.New("the variant stopped by itself")
		case <-time.After(pollEvery):
		}
	}
	rss := peakRSS(pids)
	m.StateMB = float64(dirSize(dir)) / (1 << 20) // while it runs: a stop may drop state
	stopProfile()
	stopErr := running.Stop()
	if ts, ok := running.(TxnStatser); ok {
		st := ts.TxnStats()
		m.Txn = &st
	}
	if runErr != nil {
		return fail(errors.Join(runErr, stopErr))
	}
	if stopErr != nil {
		return fail(stopErr)
	}
	// The broker's CPU is known when its pids were given, or when it is
	// the embedded broker and the variant runs in this process with it.
	brokerKnown := len(b.cfg.BrokerPids) > 0 || b.env.Embedded && pids == nil
	begin := sample{at: began, cpu: cpu0, brokerCPU: broker0}
	if c0, c1, steady, ok := coldWindow(steps, int64(b.cfg.ColdRecords)); ok {
		cold := figures(c0, c1, brokerKnown)
		m.Cold = &cold
		steps, begin = steady, c1
	}
	start, stop, fromStart := throughputWindow(steps, begin, total-begin.committed)
	f := figures(start, stop, brokerKnown)
	m.WindowFromStart = fromStart
	m.WindowSec = stop.at.Sub(start.at).Seconds()
	m.RecordsPerSec = f.RecordsPerSec
	m.CPUSecPerMillion, m.BrokerCPUSecPerMillion, m.TotalCPUSecPerMillion = f.CPUSecPerMillion, f.BrokerCPUSecPerMillion, f.TotalCPUSecPerMillion
	m.PeakRSSMB = float64(rss) / (1 << 20)

	if err := b.check(ctx, &m, wl, v, in, outTopic, nil); err != nil {
		return fail(err)
	}
	return m
}

// throughputWindow picks the window of a throughput run from the looks
// that saw the committed offsets move (the last one at the input's end).
// It starts at the first commit, so start-up is outside. It ends at the
// commit before the last one when there are enough: the last transaction
// holds whatever was left when the input ran out, and a variant commits
// that remainder only when its commit interval is up, a wait that belongs
// to the input's end, not to the variant's speed. With too few commits in
// the window (less than a tenth of the input), it starts when the variant
// was started instead (fromStart): start-up included.
func throughputWindow(steps []sample, started sample, total int64) (start, stop sample, fromStart bool) {
	enough := func(a, b sample) bool { return b.committed-a.committed >= total/10 && b.at.After(a.at) }
	n := len(steps)
	switch {
	case n == 0:
		return started, started, true
	case n >= 3 && enough(steps[0], steps[n-2]):
		return steps[0], steps[n-2], false
	case n >= 2 && enough(steps[0], steps[n-1]):
		return steps[0], steps[n-1], false
	}
	return started, steps[n-1], true
}

// check reads the output to its end (with r, or a new reader) and runs the
// workload's check.
func (b *bench) check(ctx context.Context, m *Measurement, wl Workload, v Variant, in Input, outTopic string, r *outputReader) error {
	if r == nil {
		var err error
		if r, err = startOutputReader(ctx, b.env.Brokers, outTopic, false); err != nil {
			return err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err := r.readTo(rctx, b.adm, outTopic)
	n, lat := r.stop()
	if err != nil {
		return err
	}
	m.OutputRecords = n
	m.Check = "ok"
	if err := wl.Check(in, Output{Records: n}, v.ExactlyOnce()); err != nil {
		m.Check = err.Error()
	}
	if len(lat) > 0 {
		m.P50Ms = ms(Percentile(lat, 0.50))
		m.P99Ms = ms(Percentile(lat, 0.99))
		m.P999Ms = ms(Percentile(lat, 0.999))
		m.MaxMs = ms(Percentile(lat, 1))
	}
	return nil
}

// waitReady waits until the group is stable with every replica's every
// thread a member and every input partition assigned.
func (b *bench) waitReady(ctx context.Context, running Running, app, inTopic string) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		gs, err := b.adm.DescribeGroups(ctx, app)
		if err == nil {
			if g, ok := gs[app]; ok && g.Err == nil && g.State == "Stable" && len(g.Members) == b.cfg.Replicas*b.cfg.Threads {
				if parts := g.AssignedPartitions()[inTopic]; len(parts) == b.cfg.Partitions {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("group %s not stable with %d members: %w", app, b.cfg.Replicas*b.cfg.Threads, ctx.Err())
		case <-running.Done():
			return errors.New("the variant stopped by itself")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitCommitted waits until the group has committed through the input's
// end with at least min records on every partition.
func (b *bench) waitCommitted(ctx context.Context, running Running, app, inTopic string, min int64) error {
	var ends map[int32]int64
	last := map[int32]int64{}
	for {
		var err error
		if ends == nil {
			ends, err = endOffsets(ctx, b.adm, inTopic)
		}
		if err == nil {
			_, err = committed(ctx, b.adm, app, inTopic, last)
		}
		done := err == nil && len(ends) == b.cfg.Partitions
		for p, e := range ends {
			if last[p] < e || last[p] < min {
				done = false
			}
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			var c int64
			for _, v := range last {
				c += v
			}
			return fmt.Errorf("not caught up within %v: committed %d of the input (%v)", b.cfg.RunTimeout, c, ctx.Err())
		case <-running.Done():
			return errors.New("the variant stopped by itself")
		case <-time.After(pollEvery):
		}
	}
}

// latencyRun: start the variant on empty topics, wait until it owns every
// partition, write the input at a steady rate and measure each record's
// delay to a read_committed reader of the output.
func (b *bench) latencyRun(ctx context.Context, p Point, wl Workload, v Variant, in Input, rep int, rate int) (m Measurement) {
	b.step(p, v, PhaseLatency, rep)
	defer b.done()
	m = Measurement{Variant: v.Name(), Phase: PhaseLatency, Repeat: rep, Rate: float64(rate), InputRecords: in.Len()}
	prefix, app, inTopic, outTopic := b.names(p, v)
	defer b.cleanup(prefix, app)
	fail := func(err error) Measurement {
		m.Error = err.Error()
		b.log.Warn("run failed", "point", p.String(), "variant", v.Name(), "phase", m.Phase, "error", err)
		return m
	}
	if err := b.createTopics(ctx, inTopic, outTopic); err != nil {
		return fail(err)
	}
	dir, err := os.MkdirTemp("", "onceflow-bench-")
	if err != nil {
		return fail(err)
	}
	defer keepOnFailure(&m, dir)
	runtime.GC()
	debug.FreeOSMemory()

	rctx, cancel := context.WithTimeout(ctx, b.cfg.RunTimeout)
	defer cancel()
	running, err := v.Start(rctx, RunSpec{Env: b.env, Workload: wl, App: app, Input: inTopic, Output: outTopic,
		CommitInterval: p.CommitInterval, CommitRecords: b.cfg.CommitRecords, Replicas: b.cfg.Replicas, Threads: b.cfg.Threads, StateDir: dir,
		Logger: b.cfg.Logger.Named(v.Name())})
	if err != nil {
		return fail(err)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		return running.Stop()
	}
	defer stop()
	if err := b.waitReady(rctx, running, app, inTopic); err != nil {
		return fail(err)
	}
	// Ready means consuming and committing on every partition (after any
	// restore), not just a member of a stable group: one warm-up record per
	// partition must be committed before the measured input is written.
	if err := warmup(rctx, b.env.Brokers, inTopic, b.cfg.Partitions, wl); err != nil {
		return fail(err)
	}
	if err := b.waitCommitted(rctx, running, app, inTopic, 1); err != nil {
		return fail(fmt.Errorf("warm-up: %w", err))
	}
	r, err := startOutputReader(rctx, b.env.Brokers, outTopic, true)
	if err != nil {
		return fail(err)
	}
	w, err := newWriter(b.env.Brokers, inTopic, 0)
	if err != nil {
		r.stop()
		return fail(err)
	}
	stopProfile := b.startProfile(p, v, PhaseLatency, rep)
	defer stopProfile()
	handed, err := write(rctx, w, in, rate)
	w.Close()
	if err != nil {
		r.stop()
		return fail(err)
	}
	m.AchievedRate = float64(in.Len()) / handed.Seconds()
	if err := b.waitCommitted(rctx, running, app, inTopic, 0); err != nil {
		r.stop()
		return fail(err)
	}
	stopProfile()
	if err := b.check(ctx, &m, wl, v, in, outTopic, r); err != nil {
		return fail(err)
	}
	if ts, ok := running.(TxnStatser); ok {
		st := ts.TxnStats()
		m.Txn = &st
	}
	if err := stop(); err != nil {
		return fail(err)
	}
	return m
}

// startProfile starts a CPU profile of the first run of onceflow (and of
// the sarama loop) in each phase at each point, when asked, and returns
// what ends it (and writes the allocation profiles before and after, for
// pprof -diff_base).
func (b *bench) startProfile(p Point, v Variant, phase string, rep int) func() {
	if b.cfg.ProfileDir == "" || rep != 0 {
		return func() {}
	}
	if _, ok := v.(onceflowVariant); !ok {
		if _, ok := v.(saramaVariant); !ok {
			return func() {}
		}
	}
	name := fmt.Sprintf("%s-%dms", p.Workload, p.CommitInterval.Milliseconds())
	if p.ValueSize > 0 {
		name += fmt.Sprintf("-%dB", p.ValueSize)
	}
	name = filepath.Join(b.cfg.ProfileDir, name+"-"+v.Name())
	if phase != PhaseThroughput {
		name += "-" + phase
	}
	if err := os.MkdirAll(b.cfg.ProfileDir, 0o755); err != nil {
		b.log.Warn("profile", "error", err)
		return func() {}
	}
	writeAllocs := func(path string) {
		f, err := os.Create(path)
		if err != nil {
			b.log.Warn("profile", "error", err)
			return
		}
		defer f.Close()
		_ = pprof.Lookup("allocs").WriteTo(f, 0)
	}
	writeAllocs(name + "-allocs-base.pprof")
	f, err := os.Create(name + "-cpu.pprof")
	if err != nil {
		b.log.Warn("profile", "error", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.log.Warn("profile", "error", err)
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
			writeAllocs(name + "-allocs.pprof")
		})
	}
}

// machine describes this machine.
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if kb := statusKB("/proc/meminfo", "MemTotal:"); kb > 0 {
		m.MemoryGB = float64(kb) / (1 << 20)
	}
	return m
}
