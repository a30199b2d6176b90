package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
)

// idle is a Handler that holds its sessions and processes nothing.
type idle struct{ setup chan struct{} }

func (h idle) Setup(Session) (chan<- Batch, error) {
	select {
	case h.setup <- struct{}{}:
	default:
	}
	return make(chan Batch, 1024), nil
}
func (idle) Cleanup(Session) error { return nil }

// A replica cannot join a group whose members assign topic-partitions one
// by one (an earlier release): the broker refuses the join, and the error
// says why and that the replica joins once they have left.
func TestTaskGroupBesideAnEarlierRelease(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	client := Client{Brokers: b.Addrs()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := Connect(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Ensure(map[string]int32{"ma": 2, "mb": 2}, nil); err != nil {
		t.Fatal(err)
	}
	tm := Timeouts{Session: 6 * time.Second, Rebalance: 6 * time.Second}
	old, err := NewGroup(client, tm, "app", "old", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	go func() {
		for range old.Errors() {
		}
	}()
	setup := make(chan struct{}, 1)
	octx, stopOld := context.WithCancel(ctx)
	defer stopOld()
	go old.Consume(octx, []string{"ma", "mb"}, idle{setup: setup})
	select {
	case <-setup:
	case <-ctx.Done():
		t.Fatal("the old member never started a session")
	}

	g, err := NewTaskGroup(client, tm, "app", "new", map[string]int32{"ma": 0, "mb": 0})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	go func() {
		for range g.Errors() {
		}
	}()
	err = g.Consume(ctx, []string{"ma", "mb"}, idle{setup: make(chan struct{}, 1)})
	t.Logf("Consume: %v", err)
	if err == nil || !strings.Contains(err.Error(), "earlier release") {
		t.Errorf("Consume returned %v, want the refusal explained", err)
	}
}

// claimsOf is a Handler that reports the claims of each session it gets.
type claimsOf chan map[string][]int32

func (h claimsOf) Setup(s Session) (chan<- Batch, error) {
	select {
	case h <- s.Claims():
	default:
	}
	return make(chan Batch, 1024), nil
}
func (claimsOf) Cleanup(Session) error { return nil }

// A balanced member joins a group whose other member is of an earlier
// release (sarama's sticky assignor only): the group uses the assignor
// both offer, and each member gets partitions; once the earlier member
// has left, the balanced member gets everything under its own assignor.
func TestBalancedGroupBesideAnEarlierRelease(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	client := Client{Brokers: b.Addrs()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := Connect(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	topics := []string{"ba", "bb"}
	if _, err := admin.Ensure(map[string]int32{"ba": 2, "bb": 2}, nil); err != nil {
		t.Fatal(err)
	}
	tm := Timeouts{Session: 6 * time.Second, Rebalance: 6 * time.Second}
	consume := func(ctx context.Context, g *Group, h Handler) chan struct{} {
		go func() {
			for range g.Errors() {
			}
		}()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				_ = g.Consume(ctx, topics, h)
			}
		}()
		return done
	}
	count := func(c map[string][]int32) (n int) {
		for _, ps := range c {
			n += len(ps)
		}
		return n
	}
	old, err := NewGroup(client, tm, "app", "old", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	oldClaims := make(claimsOf, 16)
	octx, stopOld := context.WithCancel(ctx)
	oldDone := consume(octx, old, oldClaims)
	// The earlier release holds every partition first, as in a rolling
	// upgrade, so the new member can only join beside it.
	for c := range oldClaims {
		if count(c) == 4 {
			break
		}
	}

	g, err := NewBalancedGroup(client, tm, "app", "new", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	newClaims := make(claimsOf, 16)
	consume(ctx, g, newClaims)
	wait := func(what string, h claimsOf, ok func(map[string][]int32) bool) {
		t.Helper()
		for {
			select {
			case c := <-h:
				t.Logf("%s: claims %v", what, c)
				if ok(c) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no session where %s", what)
			}
		}
	}
	wait("the new member holds some partitions beside the old one", newClaims, func(c map[string][]int32) bool { return count(c) > 0 && count(c) < 4 })
	stopOld()
	<-oldDone
	if err := old.Leave(); err != nil {
		t.Fatal(err)
	}
	wait("the new member holds every partition alone", newClaims, func(c map[string][]int32) bool { return count(c) == 4 })
}
