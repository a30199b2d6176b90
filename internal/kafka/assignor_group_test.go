package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/embedded"
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
