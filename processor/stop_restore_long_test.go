//go:build long

package processor_test

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/processor"
)

// A stop (SIGTERM) while a replica restores, its restore fetch held by a
// broker that does not answer, returns cleanly within the stop bound: the
// restore's client gives the fetch up at its request deadline (about
// 10 s), well inside the bound.
func TestStopWhileRestoringIsBounded(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	env.Produce(in, 0, 200)
	r1, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: app, InstanceID: "r1", StateDir: t.TempDir()},
		countTopology(in, out))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r1.Run(ctx) }()
	env.WaitCount(out, 200, 60*time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("r1 Run: %v", err)
	}

	gate := hangGate{newFetchGate("onceflow-restore")}
	defer gate.release()
	r2, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: app, InstanceID: "r2", StateDir: t.TempDir(), Dial: gate.dial},
		countTopology(in, out))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- r2.Run(ctx) }()
	select {
	case <-gate.held:
	case err := <-done:
		t.Fatalf("r2 ended before restoring: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the restore never fetched its changelog")
	}
	if st := r2.Status(); !st.Restoring {
		t.Fatalf("not restoring: %+v", st)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		took := time.Since(start)
		t.Logf("stopped while restoring after %v (bound %v): %v", took.Round(time.Millisecond), r2.StopBound(), err)
		if err != nil {
			t.Errorf("a stop while restoring is not clean: %v after %v", err, took)
		}
	case <-time.After(r2.StopBound() + 5*time.Second):
		t.Fatalf("Run still running %v after its stop while restoring (bound %v)", time.Since(start), r2.StopBound())
	}
}

// hangGate holds the responses to the first Fetch a client with clientID
// sends, as a broker that stops answering would: unlike fetchGate, closing
// the connection or its read deadline ends a held read, as they end a
// read on a silent socket.
type hangGate struct {
	*fetchGate
}

func (g hangGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := g.fetchGate.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &closableGatedConn{gatedConn: c.(*gatedConn), closed: make(chan struct{})}, nil
}

type closableGatedConn struct {
	*gatedConn
	closed    chan struct{}
	closeOnce sync.Once
	deadline  atomicTime
}

type atomicTime struct {
	mu sync.Mutex
	t  time.Time
}

func (a *atomicTime) set(t time.Time) { a.mu.Lock(); a.t = t; a.mu.Unlock() }
func (a *atomicTime) get() time.Time  { a.mu.Lock(); defer a.mu.Unlock(); return a.t }

func (c *closableGatedConn) SetReadDeadline(t time.Time) error {
	c.deadline.set(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *closableGatedConn) SetDeadline(t time.Time) error {
	c.deadline.set(t)
	return c.Conn.SetDeadline(t)
}

func (c *closableGatedConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	gated := c.gated
	c.mu.Unlock()
	if gated {
		var expired <-chan time.Time
		if d := c.deadline.get(); !d.IsZero() {
			timer := time.NewTimer(time.Until(d))
			defer timer.Stop()
			expired = timer.C
		}
		select {
		case <-c.g.released:
		case <-c.closed:
			return 0, net.ErrClosed
		case <-expired:
			return 0, os.ErrDeadlineExceeded
		}
	}
	return c.Conn.Read(b)
}

func (c *closableGatedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
