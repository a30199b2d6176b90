//go:build long

package engine_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// A replica's driver is stuck in a commit (held by a hook, at the step
// named) while a second replica joins and the group revokes half its
// tasks: the revoke is not released within half the rebalance timeout,
// so the replica leaves the group. Then the commit goes on: before its
// offsets joined the transaction (the late commit is refused and aborts)
// or after (the transaction commits what the new owner must then skip).
// Either way every input record has exactly one output.
func TestRevokeWhileTheDriverIsStuckInACommit(t *testing.T) {
	for _, step := range []string{"before add offsets", "before commit"} {
		t.Run(strings.ReplaceAll(step, " ", "-"), func(t *testing.T) {
			env := enginetest.New(t)
			in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
			env.CreateTopic(in, 4)
			g := compile(t, copyex.Topology(in, out))
			cfg1 := env.Config(app, "r1")
			log1 := &logBuffer{}
			cfg1.Logger = hclog.New(&hclog.LoggerOptions{Name: "r1", Level: hclog.Info, Output: log1})
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("r1:\n%s", log1)
				}
			})
			var armed atomic.Bool
			held, release := make(chan struct{}), make(chan struct{})
			hook := func() {
				if armed.CompareAndSwap(true, false) {
					close(held)
					<-release
				}
			}
			if step == "before add offsets" {
				cfg1.Hooks.BeforeAddOffsets = hook
			} else {
				cfg1.Hooks.BeforeCommit = hook
			}
			load := startLoad(env, in, 0, 20)
			r1 := env.Start(cfg1, g)
			waitFor(t, "r1 to commit", 60*time.Second, func() bool { return r1.E.Stats().Committed >= 3 })
			armed.Store(true)
			recv(t, "r1's commit held", held, 60*time.Second)
			r2 := env.Start(env.Config(app, "r2"), g)
			waitFor(t, "r1's revoke to time out, or r2 to claim a task", 60*time.Second, func() bool {
				l := log1.String()
				return strings.Contains(l, "was not released in time") || strings.Contains(l, "ConsumeClaim did not exit") || len(claimedOf(r2)) > 0
			})
			close(release)
			if l := log1.String(); step == "before add offsets" && !strings.Contains(l, "was not released in time") {
				// The driver does not take the revoked claim's last batch:
				// the revoke must not wait for it.
				t.Errorf("r1 did not leave the group within half the rebalance timeout of the revoke")
			}
			waitFor(t, "both replicas to hold two partitions and commit", 90*time.Second, func() bool {
				return len(claimedOf(r1)) == 2 && len(claimedOf(r2)) == 2 && r2.E.Stats().Committed >= 2
			})
			n := load.finish()
			env.WaitCount(out, n, 90*time.Second)
			for _, r := range []*enginetest.Replica{r1, r2} {
				if err := r.Stop(); err != nil {
					t.Error(err)
				}
			}
			rep := env.Verify(in, out)
			t.Logf("%s; r1 %+v; r2 %+v", rep, r1.E.Stats(), r2.E.Stats())
			if !rep.OK || rep.Input != n {
				t.Errorf("%s (input %d produced)", rep, n)
			}
		})
	}
}

// r1's driver fails to apply a committed transaction's state (it rewinds:
// drops the producer, ends the session) just as r2 joins and the group
// revokes half r1's tasks: the revoke meets a driver that is rewinding.
// The counts read back equal a recount of the input.
func TestRevokeDuringARewind(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 4)
	g := compile(t, plainCountTopology(in, out))
	cfg1 := stateConfig(env, app, "r1", t.TempDir())
	var armed atomic.Bool
	held, failed := make(chan struct{}), make(chan struct{})
	var r2 atomic.Pointer[enginetest.Replica]
	cfg1.Hooks.ApplyError = func() error {
		if !armed.CompareAndSwap(true, false) {
			return nil
		}
		close(held)
		// Fail once the group is in a generation after r2 joined: r1's
		// revoke is then waiting for this driver.
		for r := r2.Load(); r == nil || r.E.Status().Generation < 2; r = r2.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		close(failed)
		return errors.New("injected apply failure")
	}
	load := startLoad(env, in, 0, 20)
	r1 := env.Start(cfg1, g)
	waitFor(t, "r1 to commit", 60*time.Second, func() bool { return r1.E.Stats().Committed >= 3 })
	armed.Store(true)
	recv(t, "r1's apply held", held, 60*time.Second)
	r2.Store(env.Start(stateConfig(env, app, "r2", t.TempDir()), g))
	recv(t, "r1's apply failure", failed, 60*time.Second)
	waitFor(t, "both replicas to hold two partitions and commit", 90*time.Second, func() bool {
		return len(claimedOf(r1)) == 2 && len(claimedOf(r2.Load())) == 2 && r2.Load().E.Stats().Committed >= 2 && r1.E.Stats().Committed >= 5
	})
	n := load.finish()
	env.WaitCount(out, n, 90*time.Second)
	waitConsumed(t, env, app, 60*time.Second, in)
	for _, r := range []*enginetest.Replica{r1, r2.Load()} {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d input records; r1 %+v; r2 %+v", n, r1.E.Stats(), r2.Load().E.Stats())
	checkCounts(t, env, in, out)
}
