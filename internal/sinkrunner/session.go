package sinkrunner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/sinks"
)

// session is one generation of the runner's group membership: it restores
// the ledgers of the partitions it got, delivers their records, commits
// the offsets below which every delivery is settled, and waits for the
// attempts out when it ends.
type session struct {
	r      *Runner
	s      kafka.Session
	ctx    context.Context
	cancel context.CancelFunc
	end    context.CancelFunc // ends the group session (the runner rejoins)
	parts  map[string]map[int32]*partition
	wg     sync.WaitGroup // feeders, committer, deliveries
	mu     sync.Mutex
	unk    map[string]int // unknown entries counted on the gauge, per sink
	// outboxIDs are the topic ids of the outboxes when the session began
	// (none when they could not be read).
	outboxIDs map[string]string
	// proven is when (monotonic nanoseconds since start) the last
	// heartbeat or offset commit that the coordinator accepted for this
	// generation was sent: no attempt starts once it is half the session
	// timeout old, because by the session timeout the group may have
	// given the partitions to another runner.
	proven atomic.Int64
	start  time.Time
	// lostGen is set once the coordinator said this runner no longer
	// holds its generation, or the proof grew too old.
	lostGen atomic.Bool
}

// Setup restores the ledger of every claimed partition and starts
// delivering.
func (ss *session) Setup(s kafka.Session) (chan<- kafka.Batch, error) {
	r := ss.r
	ss.s = s
	ss.ctx, ss.cancel = context.WithCancel(s.Context())
	ss.parts = map[string]map[int32]*partition{}
	ss.unk = map[string]int{}
	gen := s.Metadata().GenerationID
	ss.start = time.Now()
	ss.proven.Store(0) // the join that opened the session proves the generation
	ids, err := r.admin.TopicIDs(r.topics...)
	if err != nil {
		r.log.Warn("cannot read the outbox topic ids; commands are told apart by their offsets alone", "error", err)
	}
	ss.outboxIDs = ids
	for topic, ps := range s.Claims() {
		sk := r.sinks[topic]
		ss.parts[topic] = map[int32]*partition{}
		for _, p := range ps {
			n, err := r.ledgers.restore(ss.ctx, sk.ledger, p)
			if err != nil && s.Context().Err() != nil {
				// Routine: a rebalance or a stop. The next owner
				// restores from the changelog.
				r.log.Info("ledger restore stopped: the session ended", "error", err)
				return nil, fmt.Errorf("%w: %w", errSessionEnded, err)
			}
			if err != nil {
				return nil, err
			}
			if n.stale > 0 {
				r.log.Info("ledger restore skipped entries a runner wrote after it had lost the partition",
					"sink", sk.name, "partition", p, "count", n.stale)
			}
			r.m.sink(sk.name).staleEntries.Add(int64(n.stale))
			ss.unk[sk.name] += n.unknown
			r.m.sink(sk.name).unknown.Add(int64(n.unknown))
			fence, err := r.ledgers.fence(ss.ctx, sk.ledger, p)
			if err != nil && s.Context().Err() != nil {
				r.log.Info("recording the fence stopped: the session ended", "error", err)
				return nil, fmt.Errorf("%w: %w", errSessionEnded, err)
			}
			if err != nil {
				return nil, fmt.Errorf("sinkrunner: record the fence of %s/%d: %w", topic, p, err)
			}
			if err := r.ledgers.repair(ss.ctx, sk.ledger, p, n.staleKeys, fence); err != nil {
				if s.Context().Err() != nil {
					r.log.Info("writing the skipped ledger entries again stopped: the session ended", "error", err)
					return nil, fmt.Errorf("%w: %w", errSessionEnded, err)
				}
				return nil, fmt.Errorf("sinkrunner: write the ledger of %s/%d again: %w", topic, p, err)
			}
			ss.parts[topic][p] = newPartition(ss, sk, p, fence)
		}
	}
	// The fences are in the changelogs; a heartbeat sent after them must
	// be accepted before the first attempt. A later owner joins a later
	// generation, after that heartbeat, so it records its fences after
	// these and gets higher ones.
	if err := ss.proveFences(); err != nil {
		if kafka.IsRebalancing(err) {
			r.log.Info("session ended by a rebalance during the ledger restore")
			return nil, fmt.Errorf("%w: %w", errSessionEnded, err)
		}
		return nil, err
	}
	r.log.Info("delivering", "generation", gen, "claims", s.Claims())
	for _, ps := range ss.parts {
		for _, p := range ps {
			ss.wg.Go(p.feed)
		}
	}
	ss.wg.Go(ss.commitLoop)
	ss.wg.Go(ss.fenceLoop)
	ss.wg.Go(ss.expireLoop)
	r.progress.cur.Store(ss)
	r.progress.ready.Store(true)
	r.progress.touch(r.cfg.Now())
	return nil, nil // every partition has its own channel (Partition)
}

// Partition returns the channel of a claimed partition's batches: each
// partition takes its own, so one that holds MaxBuffered deliveries
// (backpressure) holds up only its own reading.
func (ss *session) Partition(topic string, partition int32) chan<- kafka.Batch {
	if p, ok := ss.parts[topic][partition]; ok {
		return p.in
	}
	return nil
}

// errSessionEnded marks a Setup cut short because its session ended (a
// rebalance, a stop): not a failure, the runner joins again at once.
var errSessionEnded = errors.New("sinkrunner: the session ended during its setup")

// Cleanup stops new attempts, waits for the attempts out (each bounded by
// the attempt timeout), and commits what is settled.
func (ss *session) Cleanup(kafka.Session) error {
	ss.r.progress.ready.Store(false)
	defer func() {
		ss.r.progress.cur.Store(nil)
		ss.r.progress.touch(ss.r.cfg.Now())
	}()
	ss.cancel()
	ss.wg.Wait()
	for _, ps := range ss.parts {
		for _, p := range ps {
			p.wait()
		}
	}
	err := ss.commit()
	for name, n := range ss.unk {
		ss.r.m.sink(name).unknown.Add(-int64(n))
	}
	for _, ps := range ss.parts {
		for _, p := range ps {
			ss.r.m.sink(p.sink.name).backlog.Add(-int64(p.unsettled()))
		}
	}
	return err
}

// feed hands the partition's records on to their keys' deliveries, and
// waits while the partition holds MaxBuffered deliveries (backpressure).
func (p *partition) feed() {
	for {
		select {
		case <-p.ss.ctx.Done():
			return
		case b := <-p.in:
			for i := range b.Records {
				if !p.add(p.ss.ctx, &b.Records[i]) {
					return
				}
			}
		}
	}
}

func (ss *session) commitLoop() {
	for {
		if err := ss.r.cfg.Sleep(ss.ctx, ss.r.cfg.Sinks.CommitInterval); err != nil {
			return
		}
		if err := ss.commit(); kafka.IsMembershipLost(err) {
			ss.lost(err)
			return
		} else if err != nil {
			ss.r.log.Warn("commit outbox offsets", "error", err)
		}
	}
}

// sessionTimeout is the group's session timeout: the coordinator evicts a
// member that sent no heartbeat for that long.
func (ss *session) sessionTimeout() time.Duration { return ss.r.cfg.Timeouts.WithDefaults().Session }

// fenceLoop asks the coordinator, a few times per session timeout, whether
// this runner still holds its generation, and ends the session as soon as
// it does not.
func (ss *session) fenceLoop() {
	every := ss.sessionTimeout() / 8
	for {
		t := time.NewTimer(every)
		select {
		case <-ss.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := ss.prove(); kafka.IsMembershipLost(err) {
			ss.lost(err)
			return
		} else if err != nil {
			ss.r.log.Debug("heartbeat", "error", err)
		}
	}
}

// prove sends a heartbeat of this generation and, when the coordinator
// accepts it, moves the proof to when it was sent.
func (ss *session) prove() error {
	sent := time.Since(ss.start)
	ctx, cancel := context.WithTimeout(ss.ctx, ss.sessionTimeout()/4)
	defer cancel()
	err := ss.s.Heartbeat(ctx)
	if err == nil {
		ss.provenAt(sent)
	}
	return err
}

// proveFences sends heartbeats until one is accepted, for at most half
// the session timeout (after which no attempt could start anyway).
func (ss *session) proveFences() error {
	deadline := time.Now().Add(ss.sessionTimeout() / 2)
	for {
		err := ss.prove()
		switch {
		case err == nil:
			return nil
		case kafka.IsMembershipLost(err):
			return fmt.Errorf("sinkrunner: the group took the partitions back during the ledger restore: %w", err)
		case ss.ctx.Err() != nil || time.Now().After(deadline):
			return fmt.Errorf("sinkrunner: no heartbeat accepted after recording the fences: %w", err)
		}
		ss.r.log.Debug("heartbeat after recording the fences", "error", err)
		if ss.r.cfg.Sleep(ss.ctx, 100*time.Millisecond) != nil {
			return fmt.Errorf("sinkrunner: no heartbeat accepted after recording the fences: %w", err)
		}
	}
}

// provenAt records a proof of the generation sent at sent (since start).
func (ss *session) provenAt(sent time.Duration) {
	for {
		old := ss.proven.Load()
		if int64(sent) <= old || ss.proven.CompareAndSwap(old, int64(sent)) {
			return
		}
	}
}

// live reports whether an attempt may start: the session has not ended
// and the generation was proven within half the session timeout. A
// session that is no longer live is ended, so the runner joins again.
func (ss *session) live() bool {
	return ss.ctx.Err() == nil && ss.held()
}

// held reports whether the runner still holds its partitions as far as
// the group is concerned: the coordinator has not said otherwise and the
// generation was proven within half the session timeout, so no other
// runner can have restored their ledgers yet. A session ended for
// another reason (a failed ledger write, a stop) still holds them until
// it rejoins. When the proof is too old the session is ended.
func (ss *session) held() bool {
	if ss.lostGen.Load() {
		return false
	}
	age := time.Since(ss.start) - time.Duration(ss.proven.Load())
	if age < ss.sessionTimeout()/2 {
		return true
	}
	if !ss.lostGen.Swap(true) {
		ss.r.log.Warn("no heartbeat or commit confirmed for half the session timeout; stopping deliveries before the group gives the partitions to another runner",
			"unconfirmed", age.Round(time.Millisecond), "session_timeout", ss.sessionTimeout())
	}
	ss.cancel()
	ss.end()
	return false
}

// lost ends the session at once: the coordinator said this runner no
// longer holds its generation, so its partitions are another's.
func (ss *session) lost(err error) {
	if !ss.lostGen.Swap(true) {
		ss.r.log.Info("the group took this runner's partitions; stopping deliveries", "generation", ss.s.Metadata().GenerationID, "error", err)
	}
	ss.cancel()
	ss.end()
}

// fenced ends the session at once: a downstream refused a delivery
// because it saw a higher fence for the partition, so another runner owns
// it. Nothing is written to the ledger for the delivery: an entry written
// now could land after the owner's and undo it.
func (ss *session) fenced(p *partition, key string, err error) {
	if ss.ctx.Err() == nil {
		ss.r.log.Warn("a sink refused this runner's fence: another runner owns the partition; stopping deliveries and joining again",
			"sink", p.sink.name, "key", key, "fence", p.fence, "error", err)
	}
	ss.cancel()
	ss.end()
}

// commit commits, per partition, the offset after the last record below
// which every delivery is settled, when it moved.
func (ss *session) commit() error {
	if ss.r.crashed.Load() {
		return nil
	}
	offsets := map[string]map[int32]int64{}
	var marks []func()
	for topic, ps := range ss.parts {
		for part, p := range ps {
			next, ok := p.toCommit()
			if !ok {
				continue
			}
			if offsets[topic] == nil {
				offsets[topic] = map[int32]int64{}
			}
			offsets[topic][part] = next
			marks = append(marks, func() { p.committedAt(next) })
		}
	}
	if len(offsets) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	sent := time.Since(ss.start)
	if err := ss.r.p.CommitOffsets(ctx, offsets, ss.s.Metadata()); err != nil {
		return fmt.Errorf("sinkrunner: %w", err)
	}
	ss.provenAt(sent)
	for _, m := range marks {
		m()
	}
	ss.r.purge.committed(offsets)
	return nil
}

// partition delivers the records of one outbox partition: one key's in
// order, different keys in parallel up to the parallelism.
type partition struct {
	ss    *session
	sink  *sink
	part  int32
	fence sinks.Fence
	in    chan kafka.Batch // the claim's batches (see feed)
	slots chan struct{}    // attempts out
	room  chan struct{}    // buffered deliveries
	wg    sync.WaitGroup
	mu    struct {
		sync.Mutex
		window []*item            // by offset; settled items leave from the front
		keys   map[string][]*item // deliveries waiting per record key, the first one running
		// running holds the idempotency keys being delivered, each with
		// a channel closed when its delivery ends (see claim).
		running   map[string]chan struct{}
		next      int64 // offset after the last settled prefix
		committed int64
	}
}

// item is one delivery request.
type item struct {
	rec     *kafka.Record
	key     string // record key
	settled bool
}

func newPartition(ss *session, sk *sink, p int32, fence int64) *partition {
	c := ss.r.cfg.Sinks
	pt := &partition{ss: ss, sink: sk, part: p, fence: sinks.Fence{Generation: fence, Partition: p}, in: make(chan kafka.Batch, 1),
		slots: make(chan struct{}, c.Parallelism), room: make(chan struct{}, c.MaxBuffered)}
	pt.mu.keys = map[string][]*item{}
	pt.mu.running = map[string]chan struct{}{}
	pt.mu.next, pt.mu.committed = -1, -1
	return pt
}

// add buffers a record and starts its key's deliveries when idle. It
// returns false when ctx ended while it waited for room.
func (p *partition) add(ctx context.Context, rec *kafka.Record) bool {
	select {
	case p.room <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	it := &item{rec: rec, key: string(rec.Key)}
	p.ss.r.m.sink(p.sink.name).backlog.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.next < 0 {
		p.mu.next = rec.Offset
	}
	if len(p.mu.window) == 0 {
		p.ss.r.progress.touch(p.ss.r.cfg.Now()) // the stall clock starts with the first delivery held
	}
	p.mu.window = append(p.mu.window, it)
	q := append(p.mu.keys[it.key], it)
	p.mu.keys[it.key] = q
	if len(q) == 1 {
		p.wg.Go(func() { p.drain(ctx, it.key) })
	}
	return true
}

// drain delivers one key's records in order until none waits. A record
// whose outcome is recorded without waiting (see deliver) is settled once
// that write is durable, while the key's next record goes on.
func (p *partition) drain(ctx context.Context, key string) {
	for {
		p.mu.Lock()
		it := p.mu.keys[key][0]
		p.mu.Unlock()
		ok, durable := p.ss.r.deliver(ctx, p, it.rec)
		if !ok {
			return // the session ended: the rest is delivered by the next owner
		}
		p.mu.Lock()
		q := p.mu.keys[key][1:]
		if len(q) == 0 {
			delete(p.mu.keys, key)
		} else {
			p.mu.keys[key] = q
		}
		p.mu.Unlock()
		if durable == nil {
			p.settle(it)
		} else {
			p.wg.Go(func() {
				if durable() {
					p.settle(it)
				}
			})
		}
		if len(q) == 0 {
			return
		}
	}
}

// settle marks a delivery settled: the committable offset moves past the
// settled prefix, and its room in the buffer is free.
func (p *partition) settle(it *item) {
	p.mu.Lock()
	it.settled = true
	p.advanceLocked()
	p.mu.Unlock()
	p.ss.r.progress.touch(p.ss.r.cfg.Now())
	<-p.room
	p.ss.r.m.sink(p.sink.name).backlog.Add(-1)
}

// advanceLocked drops the settled prefix of the window.
func (p *partition) advanceLocked() {
	i := 0
	for i < len(p.mu.window) && p.mu.window[i].settled {
		p.mu.next = p.mu.window[i].rec.Offset + 1
		i++
	}
	clear(p.mu.window[:i])
	p.mu.window = p.mu.window[i:]
}

// toCommit returns the offset to commit when it moved.
func (p *partition) toCommit() (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.next, p.mu.next >= 0 && p.mu.next > p.mu.committed
}

func (p *partition) committedAt(next int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.committed = max(p.mu.committed, next)
}

func (p *partition) unsettled() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.window)
}

func (p *partition) wait() { p.wg.Wait() }

// claim waits until no other delivery of idempotency key key runs in the
// partition, and marks it running until release. Records of different
// record keys are delivered in parallel, and may carry one idempotency
// key (one delivery, as the ledger counts them): each must read the
// ledger after the other's writes are queued, or both find nothing and
// both send. It returns false when ctx ended first.
func (p *partition) claim(ctx context.Context, key string) (release func(), ok bool) {
	for {
		p.mu.Lock()
		busy, running := p.mu.running[key]
		if !running {
			done := make(chan struct{})
			p.mu.running[key] = done
			p.mu.Unlock()
			return func() {
				p.mu.Lock()
				delete(p.mu.running, key)
				p.mu.Unlock()
				close(done)
			}, true
		}
		p.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// header returns the last value of a header.
func header(hs []wire.Header, key string) string {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == key {
			return string(hs[i].Value)
		}
	}
	return ""
}

// deliver settles one outbox record: skipped when the ledger says it is
// settled, otherwise attempted, retried, dead-lettered or parked as the
// ledger's state machine says. It returns false when it stopped without
// settling (the session ended, or the ledger could not be written). A
// success is recorded without waiting: durable, when not nil, waits for
// that ledger write and reports whether it was made. The key's next
// delivery may start meanwhile: its own writes are queued after this one,
// so its in-flight mark is durable only once this success is, and if this
// write fails every later one fails too.
func (r *Runner) deliver(ctx context.Context, p *partition, rec *kafka.Record) (settled bool, durable func() bool) {
	sk := p.sink
	key := header(rec.Headers, wire.HeaderIdempotencyKey)
	if key == "" {
		key = sk.name + ":" + rec.Topic + "/" + strconv.Itoa(int(rec.Partition)) + "/" + strconv.FormatInt(rec.Offset, 10)
	}
	d := sinks.Delivery{Sink: sk.name, IdempotencyKey: key, Payload: rec.Value, Source: header(rec.Headers, wire.HeaderSource),
		Fence: p.fence, Requested: rec.Timestamp}
	release, ok := p.claim(ctx, key)
	if !ok {
		return false, nil // the session ended: the next owner delivers it
	}
	defer release() // its writes are queued by then: the next read sees them
	e, err := r.ledgers.get(sk.ledger, p.part, key)
	var act Action
	if err != nil {
		if e, err = undecodable(e, err, d.Source, r.cfg.Now()); err != nil {
			r.log.Error("cannot read the delivery ledger; joining again", "sink", sk.name, "key", key, "error", err)
			p.ss.cancel()
			p.ss.end()
			return false, nil
		}
		r.log.Error("ledger entry does not decode; delivery parked as unknown", "sink", sk.name, "key", key, "error", e.LastError)
		act = Park
	} else if header(rec.Headers, wire.HeaderSinkCommand) != "" {
		var ok bool
		if e, act, ok = r.command(ctx, p, rec, key, e); !ok {
			return false, nil
		}
	} else if why := e.conflicts(rec, sk.defaultKeys); why != "" {
		var ok bool
		if key, e, act, ok = r.conflict(p, rec, key, e, why); !ok {
			return false, nil
		}
		d.IdempotencyKey = key
	} else {
		e, act = e.Resume(sk.idempotent, r.cfg.Now())
	}
	if e.PayloadHash == "" {
		e.PayloadHash = payloadHash(rec.Value)
	}
	if e.State == "" {
		e.Requested = rec.Timestamp
	}
	var first time.Time
	for {
		if r.crashed.Load() {
			return false, nil
		}
		switch act {
		case Skip:
			r.m.sink(sk.name).skipped.Add(1)
			return true, nil
		case Park:
			e.RecordKey, e.Payload = rec.Key, rec.Value // kept for a resolve as retry
			if !r.record(ctx, p, key, e, nil) {
				return false, nil
			}
			r.m.sink(sk.name).unknownOutcome.Add(1)
			r.m.sink(sk.name).unknown.Add(1)
			p.ss.unkAdd(sk.name)
			r.log.Warn("delivery outcome unknown; parked", "sink", sk.name, "key", key, "attempts", e.Attempts, "error", e.LastError)
			return true, nil
		case DeadLetter:
			if !r.deadLetter(ctx, p, rec, key, e) {
				return false, nil
			}
			return true, nil
		}
		if ctx.Err() != nil {
			return false, nil
		}
		// Deliver or Retry: one attempt.
		at := r.cfg.Now()
		if first.IsZero() {
			first = at
		}
		if e, err = e.Start(d.Source, at); err != nil {
			r.log.Error("ledger", "error", err)
			return false, nil
		}
		// The slot first: an attempt recorded as out to a sink that is
		// not idempotent must go out, or it is parked as unknown.
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return false, nil
		}
		if !p.ss.live() {
			<-p.slots
			return false, nil // nothing went out; the partition's next owner delivers it
		}
		if !sk.idempotent && !r.record(ctx, p, key, e, nil) {
			<-p.slots
			return false, nil // nothing went out
		}
		if !sk.idempotent && !p.ss.held() {
			// The ledger write took long enough for the group to have
			// moved the partition: another runner may have restored the
			// ledger without this entry and sent the request. Nothing
			// goes out; the attempt stays recorded as out, so whoever
			// resumes the delivery parks it as unknown. (A session ended
			// for another reason still holds the partition: the entry
			// is in the changelog before any other owner restores, so
			// the attempt goes out as recorded.)
			<-p.slots
			return false, nil
		}
		d.Attempt = e.Attempts
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.Sinks.AttemptTimeout)
		start := time.Now()
		derr := sk.deliverer.Deliver(actx, d)
		cancel()
		<-p.slots
		r.m.latency.WithLabelValues(sk.name).Observe(time.Since(start).Seconds())
		now := r.cfg.Now()
		if derr == nil {
			if e, err = e.Succeed(now); err != nil {
				return false, nil
			}
			wait, ok := r.recordLater(ctx, p, key, e)
			if !ok {
				return false, nil
			}
			return true, func() bool {
				if err := wait(); err != nil {
					r.ledgerFailed(p, key, err)
					return false
				}
				r.m.sink(sk.name).succeeded.Add(1)
				return true
			}
		}
		r.progress.touch(now)
		if errors.Is(derr, sinks.ErrFenced) {
			p.ss.fenced(p, key, derr)
			return false, nil // nothing applied, nothing recorded: the partition's owner delivers it
		}
		class, retryAfter := sinks.Classify(derr)
		wait := r.backoff(e.Attempts, retryAfter)
		exhausted := e.Attempts >= r.cfg.Sinks.MaxAttempts || now.Add(wait).Sub(first) > r.cfg.Sinks.MaxElapsed
		if e, act, err = e.Fail(class, derr.Error(), sk.idempotent, exhausted, now); err != nil {
			return false, nil
		}
		if act != Retry {
			continue
		}
		r.m.sink(sk.name).retries.Add(1)
		r.log.Debug("attempt failed; retrying", "sink", sk.name, "key", key, "attempt", e.Attempts, "class", class, "wait", wait, "error", derr)
		if !sk.idempotent && !p.ss.held() {
			// The partition may be another runner's by now, which found
			// the attempt recorded as out and parked the delivery: a
			// retry state written over that would hide it. The entry
			// stays as it is; whoever resumes the delivery parks it.
			return false, nil
		}
		if !sk.idempotent && !r.record(ctx, p, key, e, nil) {
			return false, nil
		}
		if r.cfg.Sleep(ctx, wait) != nil {
			return false, nil
		}
	}
}

// record writes a ledger entry; false when it could not (logged).
func (r *Runner) record(ctx context.Context, p *partition, key string, e Entry, dlq *kafka.Message) bool {
	if r.crashed.Load() {
		return false
	}
	e.Fence = p.fence.Generation
	err := r.ledgers.put(context.WithoutCancel(ctx), &write{ledger: p.sink.ledger, partition: p.part, key: key, entry: e, dlq: dlq})
	if err != nil {
		r.ledgerFailed(p, key, err)
		return false
	}
	return true
}

// recordLater queues a ledger entry without waiting for it (see
// ledgers.queue); false when it could not (logged).
func (r *Runner) recordLater(ctx context.Context, p *partition, key string, e Entry) (wait func() error, ok bool) {
	if r.crashed.Load() {
		return nil, false
	}
	e.Fence = p.fence.Generation
	w := &write{ledger: p.sink.ledger, partition: p.part, key: key, entry: e}
	l := r.ledgers
	if err := l.queue(context.WithoutCancel(ctx), w); err != nil {
		r.ledgerFailed(p, key, err)
		return nil, false
	}
	return func() error { return l.wait(context.Background(), w) }, true
}

// ledgerFailed ends the session after a failed ledger write: the
// delivery stays unsettled.
func (r *Runner) ledgerFailed(p *partition, key string, err error) {
	r.log.Error("cannot write the delivery ledger; the delivery stays unsettled, joining again", "sink", p.sink.name, "key", key, "error", err)
	p.ss.cancel()
	p.ss.end()
}

// deadLetter writes the delivery to the dead-letter topic and marks it so
// in the ledger, in one ledger write.
func (r *Runner) deadLetter(ctx context.Context, p *partition, rec *kafka.Record, key string, e Entry) bool {
	sk := p.sink
	hs := []wire.Header{
		{Key: sinks.HeaderIdempotencyKey, Value: []byte(key)},
		{Key: wire.HeaderSinkError, Value: []byte(e.LastError)},
		{Key: wire.HeaderSinkAttempts, Value: []byte(strconv.Itoa(e.Attempts))},
		{Key: wire.HeaderSinkClass, Value: []byte(e.Class)},
		{Key: wire.HeaderSource, Value: []byte(header(rec.Headers, wire.HeaderSource))},
		{Key: wire.HeaderSinkOutbox, Value: []byte(rec.Topic + "/" + strconv.Itoa(int(rec.Partition)) + "/" + strconv.FormatInt(rec.Offset, 10))},
	}
	e, err := e.DeadLettered(r.cfg.Now())
	if err != nil {
		return false
	}
	if !r.record(ctx, p, key, e, dlqMessage(sk.dlq, rec, hs)) {
		return false
	}
	r.m.sink(sk.name).deadLettered.Add(1)
	r.m.sink(sk.name).deadLetters.Add(1)
	r.log.Warn("delivery dead-lettered", "sink", sk.name, "key", key, "attempts", e.Attempts, "class", e.Class, "error", e.LastError)
	return true
}

// unkAdd counts a parked delivery of this session, so Cleanup takes it
// off the gauge with the partition.
func (ss *session) unkAdd(name string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.unk[name]++
}
