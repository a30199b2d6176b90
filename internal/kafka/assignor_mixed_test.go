package kafka

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
)

// A member of an earlier release (sarama's sticky assignor only) joins a
// group that has been running under the balanced assignor: the group
// falls back to the sticky assignor, whose plan reads every member's
// subscription user data as its own. The balanced member's must decode
// as such (or be empty), or the leader cannot plan and no member ever
// gets a partition. Every partition ends up with exactly one member.
func TestEarlierReleaseJoinsABalancedGroup(t *testing.T) {
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
	topics := []string{"xa", "xb"}
	if _, err := admin.Ensure(map[string]int32{"xa": 2, "xb": 2}, nil); err != nil {
		t.Fatal(err)
	}
	tm := Timeouts{Session: 6 * time.Second, Rebalance: 6 * time.Second}
	var wg sync.WaitGroup
	defer wg.Wait()
	consume := func(name string, g *Group, h Handler) {
		wg.Go(func() {
			for range g.Errors() {
			}
		})
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := g.Consume(ctx, topics, h); err != nil && ctx.Err() == nil {
					t.Logf("%s: consume: %v", name, err)
				}
			}
		})
	}
	count := func(c map[string][]int32) (n int) {
		for _, ps := range c {
			n += len(ps)
		}
		return n
	}
	wait := func(what string, h genClaims, ok func(map[string][]int32) bool) map[string][]int32 {
		t.Helper()
		for {
			select {
			case c := <-h:
				t.Logf("%s: generation %d, claims %v", what, c.gen, c.claims)
				if ok(c.claims) {
					return c.claims
				}
			case <-ctx.Done():
				t.Fatalf("no session where %s", what)
				return nil
			}
		}
	}

	g, err := NewBalancedGroup(client, tm, "mixed", "new", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	newClaims := make(genClaims, 16)
	consume("new", g, newClaims)
	wait("the balanced member holds every partition alone", newClaims, func(c map[string][]int32) bool { return count(c) == 4 })

	old, err := NewGroup(client, tm, "mixed", "old", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	oldClaims := make(genClaims, 16)
	consume("old", old, oldClaims)
	oc := wait("the earlier release holds some partitions", oldClaims, func(c map[string][]int32) bool { return count(c) > 0 })
	nc := wait("the balanced member holds the others", newClaims, func(c map[string][]int32) bool { return count(c) == 4-count(oc) })
	for topic, ps := range oc {
		for _, p := range ps {
			for _, q := range nc[topic] {
				if p == q {
					t.Errorf("%s/%d held by both members", topic, p)
				}
			}
		}
	}
	cancel()
}

// genClaims is a Handler that reports the generation and claims of each
// session it gets.
type genClaims chan sessionClaims

type sessionClaims struct {
	gen    int32
	claims map[string][]int32
}

func (h genClaims) Setup(s Session) (chan<- Batch, error) {
	select {
	case h <- sessionClaims{s.Metadata().GenerationID, s.Claims()}:
	default:
	}
	return make(chan Batch, 1024), nil
}
func (genClaims) Cleanup(Session) error { return nil }
