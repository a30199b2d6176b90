package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/replicas"
)

// oldestPendingMetric is the replica metric the watcher follows (see
// internal/engine's metrics).
const oldestPendingMetric = "onceflow_oldest_pending_seconds"

// watcher samples, once a tick, each input partition's committed offset
// and end offset (a partition stalls while it has input beyond its
// committed offset and that offset does not move) and the replicas'
// onceflow_oldest_pending_seconds.
type watcher struct {
	adm     *kadm.Client
	brokers []string
	group   string
	inputs  []string
	reps    []*replicas.Replica
	start   time.Time
	log     hclog.Logger

	mu struct {
		sync.Mutex
		last       map[inputPartition]int64     // committed offset per partition
		since      map[inputPartition]time.Time // since when it has not moved with input pending
		longest    time.Duration
		longestP   int32
		oldestSeen float64
		samples    []Sample
		failing    string // how the last sample failed; "" it did not
	}
}

// inputPartition is one partition of one input topic.
type inputPartition struct {
	topic     string
	partition int32
}

func newWatcher(adm *kadm.Client, brokers []string, group string, inputs []string, reps []*replicas.Replica, start time.Time, log hclog.Logger) *watcher {
	w := &watcher{adm: adm, brokers: brokers, group: group, inputs: inputs, reps: reps, start: start, log: log}
	w.mu.last, w.mu.since = map[inputPartition]int64{}, map[inputPartition]time.Time{}
	return w
}

func (w *watcher) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		w.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample reads the offsets and the replicas' metrics once; a failed read
// (a broker down, a replica paused) is skipped.
func (w *watcher) sample(ctx context.Context) {
	for _, rep := range w.reps {
		// A paused replica does not answer: the timeout ends the read.
		// Only the fixed port is read here, never the process.
		mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := rep.Metrics(mctx)
		cancel()
		if err == nil {
			w.mu.Lock()
			w.mu.oldestSeen = max(w.mu.oldestSeen, m.Max(oldestPendingMetric))
			w.mu.Unlock()
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	committed, err := w.offsets(sctx)
	if err != nil {
		w.failed("committed offsets", err)
		return
	}
	now := time.Now()
	total := int64(0)
	for _, o := range committed {
		total += o
	}
	w.mu.Lock()
	w.mu.samples = append(w.mu.samples, Sample{At: now.Sub(w.start).Seconds(), Committed: total})
	w.mu.Unlock()
	// A partition whose end offset cannot be read now (its leader down)
	// is judged at the next sample that reads it.
	ends, err := w.adm.ListEndOffsets(sctx, w.inputs...)
	if err != nil || ends.Error() != nil {
		// As for the offsets: a leader it cannot dial may stay cached.
		err = w.fresh(func(adm *kadm.Client) error {
			ends, err = adm.ListEndOffsets(sctx, w.inputs...)
			return err
		})
	}
	if err != nil {
		w.failed("end offsets", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.failing = ""
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			return
		}
		p := inputPartition{o.Topic, o.Partition}
		at := committed[p]
		last, seen := w.mu.last[p]
		began, stalled := w.mu.since[p]
		switch {
		case at >= o.Offset:
			delete(w.mu.since, p) // caught up
		case !seen || at != last || !stalled:
			w.mu.since[p] = now // input pending: a stall starts now unless the offset moves
		default:
			if d := now.Sub(began); d > w.mu.longest {
				w.mu.longest, w.mu.longestP = d, p.partition
			}
		}
		w.mu.last[p] = at
	})
}

// failed logs a failed sample unless the previous one failed the same way.
func (w *watcher) failed(what string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if why := what + ": " + err.Error(); w.mu.failing != why {
		w.log.Warn("watch: sample failed", "reading", what, "at", time.Since(w.start).Round(time.Second), "error", err)
		w.mu.failing = why
	}
}

// offsets returns the group's committed offset per input partition.
func (w *watcher) offsets(ctx context.Context) (map[inputPartition]int64, error) {
	resp, err := w.adm.FetchOffsets(ctx, w.group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		// franz-go keeps a group coordinator it cannot dial cached until
		// that broker is back (measured: 40 s after a kill -9, while
		// FindCoordinator named the new one after 11 s): ask again with
		// a client of its own.
		err = w.fresh(func(adm *kadm.Client) error {
			resp, err = adm.FetchOffsets(ctx, w.group)
			return err
		})
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[inputPartition]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("chaos: committed offsets: %w", err)
	}
	out := map[inputPartition]int64{}
	for _, topic := range w.inputs {
		for p, o := range resp[topic] {
			if o.Err == nil && o.At > 0 {
				out[inputPartition{topic, p}] = o.At
			}
		}
	}
	return out, nil
}

// fresh calls fn with an admin client of its own, closed afterwards.
func (w *watcher) fresh(fn func(*kadm.Client) error) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	return fn(kadm.NewClient(cl))
}

// committed is the sum of the group's committed offsets on the input.
func (w *watcher) committed(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := w.offsets(ctx)
	n := 0
	for _, o := range m {
		n += int(o)
	}
	return n, err
}

// longestStall is the longest time an input partition had input beyond
// its committed offset and that offset did not move, as sampled.
func (w *watcher) longestStall() (float64, int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.longest.Seconds(), w.mu.longestP
}

// maxOldestPending is the highest onceflow_oldest_pending_seconds any
// replica reported.
func (w *watcher) maxOldestPending() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.oldestSeen
}

// throughput returns the samples of the group's committed input.
func (w *watcher) throughput() []Sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.mu.samples)
}
