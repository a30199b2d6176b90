package sinks

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Fence says which owner of an outbox partition made a delivery. A runner
// that lost the partition (evicted by its group while stalled or cut off:
// a zombie) may still have attempts out; a downstream that remembers the
// highest Generation it saw per outbox partition, and refuses a lower one,
// refuses the zombie's late writes once the new owner has written.
type Fence struct {
	// Generation rises with every owner of the partition: it is the
	// position in the partition's ledger changelog at which the runner
	// recorded that it took the partition, before its first attempt. So a
	// later owner's is always higher than any earlier owner's, across
	// restarts and across a consumer group that was deleted and created
	// again (whose group generation starts over at 1). It is not the
	// group's generation id. Zero means no fence.
	Generation int64
	// Partition is the outbox partition.
	Partition int32
}

// String formats the fence as "<generation>/<partition>" (the
// Onceflow-Fence header of sinks/httpsink).
func (f Fence) String() string { return fmt.Sprintf("%d/%d", f.Generation, f.Partition) }

// ParseFence parses the form String writes.
func ParseFence(s string) (Fence, error) {
	gen, part, ok := strings.Cut(s, "/")
	g, gerr := strconv.ParseInt(gen, 10, 64)
	p, perr := strconv.ParseInt(part, 10, 32)
	if !ok || gerr != nil || perr != nil || g < 0 || p < 0 {
		return Fence{}, fmt.Errorf("sinks: fence %q is not <generation>/<partition>", s)
	}
	return Fence{Generation: g, Partition: int32(p)}, nil
}

// ErrFenced is wrapped by the error of a delivery a downstream refused
// because it had seen a higher fence for the outbox partition: a later
// owner has the partition, and this runner is a zombie. Nothing was
// applied. The runner neither retries nor dead-letters it, and writes
// nothing to the ledger for it: it ends its session at once and joins its
// group again, leaving the delivery to the partition's owner. A sink
// returns it as FenceGuard.Apply does (a permanent Error wrapping it).
var ErrFenced = errors.New("sinks: fenced: a later owner of the outbox partition has delivered")

// FenceGuard remembers the highest fence seen per sink and outbox
// partition and refuses deliveries below it. It belongs where the effects
// of every runner meet, such as the service an HTTP sink calls (with
// ParseFence on the Onceflow-Fence header) or one process that applies
// them all: one FenceGuard per runner process guards nothing, since a
// zombie and the new owner run in different processes. A downstream that
// keeps its state in a database keeps the highest fence there instead, in
// the effect's own transaction, as sinks/pgsink does.
//
// The zero value is ready; it is safe for concurrent use.
type FenceGuard struct {
	mu    sync.Mutex
	parts map[fenceKey]*fencePart
}

type fenceKey struct {
	sink      string
	partition int32
}

// fencePart is one partition's highest fence. Effects of the highest
// fence run under the read lock; raising it takes the write lock, so it
// waits for the effects of the lower fence that are running: no effect of
// a lower fence completes after a higher one was admitted.
type fencePart struct {
	mu   sync.RWMutex
	high int64
	seen bool
}

func (g *FenceGuard) part(sink string, partition int32) *fencePart {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := fenceKey{sink, partition}
	fp := g.parts[k]
	if fp == nil {
		if g.parts == nil {
			g.parts = map[fenceKey]*fencePart{}
		}
		fp = &fencePart{}
		g.parts[k] = fp
	}
	return fp
}

// Apply runs apply for d unless a higher fence was seen for d's sink and
// outbox partition, and returns its error. A refused delivery gets a
// permanent Error wrapping ErrFenced, and apply is not called. A higher
// fence than any seen becomes the highest once every apply of the lower
// one that was running has returned.
func (g *FenceGuard) Apply(d Delivery, apply func() error) error {
	fp := g.part(d.Sink, d.Fence.Partition)
	for {
		fp.mu.RLock()
		high, seen := fp.high, fp.seen
		if seen && d.Fence.Generation == high {
			err := apply()
			fp.mu.RUnlock()
			return err
		}
		fp.mu.RUnlock()
		if seen && d.Fence.Generation < high {
			return PermanentError(fmt.Errorf("%w: sink %q fence %s is below %d", ErrFenced, d.Sink, d.Fence, high))
		}
		fp.mu.Lock()
		if !fp.seen || d.Fence.Generation > fp.high {
			fp.high, fp.seen = d.Fence.Generation, true
		}
		fp.mu.Unlock()
	}
}

// Highest returns the highest fence generation seen for a sink's outbox
// partition, and whether one was seen.
func (g *FenceGuard) Highest(sink string, partition int32) (int64, bool) {
	fp := g.part(sink, partition)
	fp.mu.RLock()
	defer fp.mu.RUnlock()
	return fp.high, fp.seen
}
