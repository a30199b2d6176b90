// Package sinkadmin reads what the sink runner leaves in Kafka, for the
// CLI: each sink's delivery ledger (its compacted changelog topic
// "<app>-sink-<name>-ledger-changelog", the latest entry per idempotency
// key) and its dead-letter topic ("<app>-sink-<name>-dlq"). It never
// changes a ledger itself: Redrive and Resolve (control.go) write a command
// record to the sink's outbox, and the runner that owns the partition
// applies it in order.
package sinkadmin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/sinks"
)

// Status is one sink's ledger, counted, and its backlog.
type Status struct {
	Sink string `json:"sink"`
	// Ledger is the ledger's changelog topic.
	Ledger string `json:"ledger"`
	// Deliveries is the number of idempotency keys in the ledger.
	Deliveries int `json:"deliveries"`
	// States counts deliveries by ledger state (every state, zeros
	// included).
	States map[string]int `json:"states"`
	// InFlight counts pending deliveries with an attempt out.
	InFlight int `json:"in_flight"`
	// Undecodable counts ledger values that did not decode.
	Undecodable int `json:"undecodable,omitempty"`
	// Outbox is the sink's outbox topic.
	Outbox string `json:"outbox"`
	// Unread counts the outbox records the sink runners' group has not
	// read yet (delivery requests and commands), up to the last stable
	// offsets: the backlog, which has no ledger entry yet. Transaction
	// markers and aborted records are not counted.
	Unread int64 `json:"unread"`
	// UnreadEstimated is set when a partition was too far behind to count
	// record by record: Unread is then an upper bound.
	UnreadEstimated bool `json:"unread_estimated,omitempty"`
}

// RunnerGroup is the consumer group of app's sink runners.
func RunnerGroup(app string) string { return app + "-sinks" }

// Delivery is one ledger entry with its idempotency key.
type Delivery struct {
	Sink string `json:"sink"`
	Key  string `json:"key"`
	// Partition is the ledger's partition, which is the outbox's.
	Partition int32 `json:"partition"`
	sinkrunner.Entry
}

// DeadLetter is one record of a dead-letter topic.
type DeadLetter struct {
	Sink      string    `json:"sink"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Key       string    `json:"idempotency_key"`
	Error     string    `json:"error"`
	Class     string    `json:"class"`
	Attempts  int       `json:"attempts"`
	Source    string    `json:"source,omitempty"`
	Outbox    string    `json:"outbox,omitempty"`
	Time      time.Time `json:"time"`
	RecordKey []byte    `json:"record_key,omitempty"`
	Payload   []byte    `json:"payload"`
	// State is the delivery's state in the ledger now ("dead-lettered",
	// "pending", "succeeded", ...); "" when the ledger no longer holds it
	// (expired) or cannot be read.
	State string `json:"state"`
	// Redriven is set when this dead letter was redriven: the delivery
	// left the dead-lettered state, or was dead-lettered again under a
	// later record.
	Redriven bool `json:"redriven,omitempty"`
}

// Outbox is the outbox topic of app's sink.
func Outbox(app, sink string) string { return outboxPrefix(app) + sink }

// outboxPrefix is the start of every outbox topic of app.
func outboxPrefix(app string) string { return app + "-sink-" }

// Sinks lists the sinks of app that have a ledger changelog or a
// dead-letter topic, sorted.
func Sinks(ctx context.Context, brokers []string, app string, extra ...kgo.Opt) ([]string, error) {
	cl, err := kgo.NewClient(append(clientcfg.Options(brokers, "onceflow-sinks", nil), extra...)...)
	if err != nil {
		return nil, fmt.Errorf("sinkadmin: client: %w", err)
	}
	defer cl.Close()
	tds, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("sinkadmin: list topics: %w", err)
	}
	return sinkNames(app, tds.Names()), nil
}

// sinkNames picks the sink names out of topic names: those of the
// ledger changelogs and dead-letter topics of app.
func sinkNames(app string, topics []string) []string {
	prefix := outboxPrefix(app)
	var names []string
	for _, t := range topics {
		rest, ok := strings.CutPrefix(t, prefix)
		if !ok {
			continue
		}
		for _, suffix := range []string{graph.LedgerTopic(""), graph.DLQTopic("")} {
			if name, ok := strings.CutSuffix(rest, suffix); ok && name != "" && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// Ledger reads the ledger of one sink: the latest entry of every key,
// sorted by key.
func Ledger(ctx context.Context, brokers []string, app, sink string, extra ...kgo.Opt) ([]Delivery, int, error) {
	topic := graph.LedgerTopic(outboxPrefix(app) + sink)
	recs, err := verify.ReadAll(ctx, brokers, topic, extra...)
	if err != nil {
		return nil, 0, fmt.Errorf("sinkadmin: ledger of %s: %w", sink, err)
	}
	ds, bad := latest(sink, recs)
	return ds, bad, nil
}

// latest folds a ledger changelog into the latest entry per key (a
// tombstone removes the key), as a runner's restore does: fence records
// and entries written by a runner that had lost the partition are left
// out (sinkrunner.Fold); bad counts values that did not decode.
func latest(sink string, recs []verify.Record) (ds []Delivery, bad int) {
	f := newLedgerFold(sink)
	f.add(recs)
	return f.deliveries()
}

// ledgerFold is a ledger changelog folded so far, one record at a time.
type ledgerFold struct {
	sink        string
	byKey       map[string]sinkrunner.Entry
	part        map[string]int32
	undecodable map[string]bool
	folds       map[int32]*sinkrunner.Fold
}

func newLedgerFold(sink string) *ledgerFold {
	return &ledgerFold{sink: sink, byKey: map[string]sinkrunner.Entry{}, part: map[string]int32{},
		undecodable: map[string]bool{}, folds: map[int32]*sinkrunner.Fold{}}
}

// add applies changelog records, in offset order per partition.
func (l *ledgerFold) add(recs []verify.Record) {
	for _, r := range recs {
		k := string(r.Key)
		f := l.folds[r.Partition]
		if f == nil {
			f = &sinkrunner.Fold{}
			l.folds[r.Partition] = f
		}
		cur := func() (sinkrunner.Entry, bool, error) {
			e, ok := l.byKey[k]
			if l.undecodable[k] {
				return e, true, sinkrunner.ErrUndecodable
			}
			return e, ok, nil
		}
		if !f.Admit(r.Offset, r.Key, r.Value, cur) {
			continue
		}
		l.part[k] = r.Partition
		delete(l.undecodable, k)
		if r.Value == nil {
			delete(l.byKey, k)
			continue
		}
		e, err := sinkrunner.DecodeEntry(r.Value)
		if err != nil {
			delete(l.byKey, k)
			l.undecodable[k] = true
			continue
		}
		l.byKey[k] = e
	}
}

// deliveries returns the latest entry of every key, sorted by key, and
// how many keys' latest values did not decode.
func (l *ledgerFold) deliveries() (ds []Delivery, bad int) {
	ds = make([]Delivery, 0, len(l.byKey))
	for k, e := range l.byKey {
		ds = append(ds, Delivery{Sink: l.sink, Key: k, Partition: l.part[k], Entry: e})
	}
	slices.SortFunc(ds, func(a, b Delivery) int { return strings.Compare(a.Key, b.Key) })
	return ds, len(l.undecodable)
}

// Count counts a sink's ledger by state.
func Count(sink string, ds []Delivery, undecodable int) Status {
	st := Status{Sink: sink, Deliveries: len(ds), States: map[string]int{}, Undecodable: undecodable}
	for _, s := range sinkrunner.States {
		st.States[string(s)] = 0
	}
	for _, d := range ds {
		st.States[string(d.State)]++
		if d.State == sinkrunner.Pending && d.InFlight {
			st.InFlight++
		}
	}
	return st
}

// StatusOf reads and counts the ledgers of the given sinks (every sink of
// app when none is given), and the records of their outboxes not read yet.
func StatusOf(ctx context.Context, brokers []string, app string, names []string, extra ...kgo.Opt) ([]Status, error) {
	if len(names) == 0 {
		var err error
		if names, err = Sinks(ctx, brokers, app, extra...); err != nil {
			return nil, err
		}
	}
	var out []Status
	for _, name := range names {
		ds, bad, err := Ledger(ctx, brokers, app, name, extra...)
		if err != nil && !errors.Is(err, verify.ErrTopicNotFound) {
			return nil, err
		}
		st, err := status(ctx, brokers, app, name, ds, bad, extra)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// status counts a sink's ledger (ds, bad: as Ledger returns them) and the
// records of its outbox not read yet.
func status(ctx context.Context, brokers []string, app, name string, ds []Delivery, bad int, extra []kgo.Opt) (Status, error) {
	st := Count(name, ds, bad)
	st.Outbox = outboxPrefix(app) + name
	st.Ledger = graph.LedgerTopic(st.Outbox)
	p, err := verify.GroupProgress(ctx, brokers, RunnerGroup(app), st.Outbox, extra...)
	if err != nil && !errors.Is(err, verify.ErrTopicNotFound) {
		return Status{}, fmt.Errorf("sinkadmin: backlog of %s: %w", name, err)
	}
	st.Unread, st.UnreadEstimated = p.Lag, p.Estimated
	return st, nil
}

// sortDeadLetters sorts dead letters by partition and offset.
func sortDeadLetters(dls []DeadLetter) {
	slices.SortStableFunc(dls, func(a, b DeadLetter) int {
		if a.Partition != b.Partition {
			return cmp.Compare(a.Partition, b.Partition)
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
}

// Unknown lists the deliveries of a sink parked as unknown.
func Unknown(ctx context.Context, brokers []string, app, sink string, extra ...kgo.Opt) ([]Delivery, error) {
	ds, _, err := Ledger(ctx, brokers, app, sink, extra...)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(ds, func(d Delivery) bool { return d.State != sinkrunner.Unknown }), nil
}

// DeadLetters reads the dead-letter topic of a sink, in partition and
// offset order.
func DeadLetters(ctx context.Context, brokers []string, app, sink string, extra ...kgo.Opt) ([]DeadLetter, error) {
	out, err := readDeadLetters(ctx, brokers, app, sink, extra)
	if err != nil {
		return nil, err
	}
	ds, _, err := Ledger(ctx, brokers, app, sink, extra...)
	if err != nil && !errors.Is(err, verify.ErrTopicNotFound) {
		return nil, err
	}
	withStates(out, ds)
	return out, nil
}

// readDeadLetters reads the dead-letter topic of a sink, without the
// deliveries' states.
func readDeadLetters(ctx context.Context, brokers []string, app, sink string, extra []kgo.Opt) ([]DeadLetter, error) {
	topic := graph.DLQTopic(outboxPrefix(app) + sink)
	recs, err := verify.ReadAll(ctx, brokers, topic, extra...)
	if err != nil {
		return nil, fmt.Errorf("sinkadmin: dead letters of %s: %w", sink, err)
	}
	out := make([]DeadLetter, 0, len(recs))
	for _, r := range recs {
		out = append(out, deadLetter(sink, r))
	}
	return out, nil
}

// withStates sets each dead letter's State from the ledger and marks it
// Redriven when its delivery is no longer dead-lettered, or a later dead
// letter has its key (dead-lettered again after a redrive). The dead
// letters are in partition and offset order; one key's are all on one
// partition (the outbox's), so the last of a key is the latest.
func withStates(dls []DeadLetter, ledger []Delivery) {
	state := map[string]sinkrunner.State{}
	for _, d := range ledger {
		state[d.Key] = d.State
	}
	last := map[string]int{}
	for i, d := range dls {
		last[d.Key] = i
	}
	for i := range dls {
		d := &dls[i]
		s, ok := state[d.Key]
		if !ok {
			continue
		}
		d.State = string(s)
		d.Redriven = s != sinkrunner.DeadLettered || last[d.Key] != i
	}
}

// deadLetter reads one dead-letter record.
func deadLetter(sink string, r verify.Record) DeadLetter {
	attempts, _ := strconv.Atoi(r.Headers[wire.HeaderSinkAttempts])
	return DeadLetter{
		Sink: sink, Partition: r.Partition, Offset: r.Offset,
		Key:      r.Headers[sinks.HeaderIdempotencyKey],
		Error:    r.Headers[wire.HeaderSinkError],
		Class:    r.Headers[wire.HeaderSinkClass],
		Attempts: attempts,
		Source:   r.Headers[wire.HeaderSource],
		Outbox:   r.Headers[wire.HeaderSinkOutbox],
		Time:     r.Timestamp, RecordKey: r.Key, Payload: r.Value,
	}
}
