package sinks

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func fenced(sink string, gen int64, part int32) Delivery {
	return Delivery{Sink: sink, IdempotencyKey: "k", Fence: Fence{Generation: gen, Partition: part}}
}

// A delivery below the highest fence of its sink and partition is refused
// (permanent, ErrFenced) without running its effect; the same or a higher
// fence runs it; other partitions and sinks keep their own highest.
func TestFenceGuardRefusesLower(t *testing.T) {
	var g FenceGuard
	applied := 0
	apply := func() error { applied++; return nil }
	for _, tc := range []struct {
		d    Delivery
		want bool // applied
	}{
		{fenced("a", 5, 0), true},
		{fenced("a", 5, 0), true},
		{fenced("a", 4, 0), false},
		{fenced("a", 9, 0), true},
		{fenced("a", 5, 0), false},
		{fenced("a", 1, 1), true}, // another partition
		{fenced("b", 2, 0), true}, // another sink
		{fenced("a", 0, 0), false},
	} {
		before := applied
		err := g.Apply(tc.d, apply)
		if got := applied > before; got != tc.want || (err == nil) != tc.want {
			t.Errorf("%s fence %s: applied %v, error %v; want applied %v", tc.d.Sink, tc.d.Fence, got, err, tc.want)
		}
		if err != nil {
			if c, _ := Classify(err); c != Permanent || !errors.Is(err, ErrFenced) {
				t.Errorf("refusal %v: class %v, want a permanent ErrFenced", err, c)
			}
		}
	}
	if high, ok := g.Highest("a", 0); high != 9 || !ok {
		t.Errorf("highest of a/0: %d %v, want 9", high, ok)
	}
	boom := errors.New("boom")
	if err := g.Apply(fenced("a", 9, 0), func() error { return boom }); err != boom {
		t.Errorf("the effect's error: %v, want it as is", err)
	}
}

// While effects of the old owner's fence run, a delivery with a higher
// fence waits for them; once it is admitted, no effect of the old fence
// starts. So no effect of a zombie completes after the new owner's first.
func TestFenceGuardOrdersOwners(t *testing.T) {
	var g FenceGuard
	var newStarted atomic.Bool
	var late atomic.Int64 // old-fence effects that ended after a new one started
	var refused atomic.Int64
	var running atomic.Int64 // old-fence effects started
	release := make(chan struct{})
	// The old fence is seen before its effects start, so that none of them
	// takes the lock to raise it: the only writer below is the new fence.
	if err := g.Apply(fenced("s", 1, 0), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			err := g.Apply(fenced("s", 1, 0), func() error {
				running.Add(1)
				<-release
				if newStarted.Load() {
					late.Add(1)
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	waitUntil(t, func() bool { return running.Load() == 8 })
	raised := make(chan error, 1)
	go func() { raised <- g.Apply(fenced("s", 2, 0), func() error { newStarted.Store(true); return nil }) }()
	// The raise queued behind the running effects: a writer waits for the
	// lock, so the lock refuses new readers.
	waitUntil(t, func() bool {
		fp := g.part("s", 0)
		if fp.mu.TryRLock() {
			fp.mu.RUnlock()
			return false
		}
		return true
	})
	close(release)
	if err := <-raised; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for range 8 {
		wg.Go(func() {
			if err := g.Apply(fenced("s", 1, 0), func() error { late.Add(1); return nil }); errors.Is(err, ErrFenced) {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	if late.Load() != 0 || refused.Load() != 8 {
		t.Errorf("%d effects of the old fence after the new one started, %d of 8 later ones refused; want 0 and 8", late.Load(), refused.Load())
	}
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
	}
}

func TestParseFence(t *testing.T) {
	f := Fence{Generation: 1 << 40, Partition: 7}
	if got, err := ParseFence(f.String()); err != nil || got != f {
		t.Errorf("ParseFence(%q) = %v, %v; want %v", f.String(), got, err, f)
	}
	for _, bad := range []string{"", "3", "a/1", "3/b", "-1/0", "1/-2", "1/99999999999"} {
		if _, err := ParseFence(bad); err == nil {
			t.Errorf("ParseFence(%q) accepted", bad)
		}
	}
}
