package processor_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// /readyz answers 503 while a replica restores its tasks from their
// changelogs and 200 once they are restored, and the restored counts are
// those the previous replica left. The restore is held at its first fetch
// (the dialer keeps the response from the reader until released), so the
// test sees it restoring without racing it.
func TestReadyzNotReadyWhileRestoring(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	const first = 500
	env.Produce(in, 0, first)

	// r1 counts the first records, leaving a changelog of 50 keys.
	r1, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: app, InstanceID: "r1", StateDir: t.TempDir()},
		countTopology(in, out))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r1.Run(ctx) }()
	env.WaitCount(out, first, 60*time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("r1 Run: %v", err)
	}

	// r2 starts on an empty state directory and must restore everything.
	gate := newFetchGate("onceflow-restore")
	reg := prometheus.NewRegistry()
	r2, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: app, InstanceID: "r2", StateDir: t.TempDir(),
		Registerer: reg, Dial: gate.dial}, countTopology(in, out))
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, r2, reg)
	t.Cleanup(gate.release) // before serve's cleanup stops r2

	select {
	case <-gate.held:
	case <-time.After(60 * time.Second):
		t.Fatal("the restore never fetched its changelog")
	}
	st := r2.Status()
	if !st.Restoring || !st.InSession {
		t.Fatalf("status while the restore is held: restoring %v, in session %v; want both", st.Restoring, st.InSession)
	}
	if len(st.Tasks) != 2 {
		t.Fatalf("status while restoring lists %d tasks, want 2: %+v", len(st.Tasks), st.Tasks)
	}
	for _, task := range st.Tasks {
		if task.State != processor.TaskRestoring {
			t.Errorf("task %s is %q while restoring, want %q", task.Task, task.State, processor.TaskRestoring)
		}
	}
	if st.Ready || r2.Ready() {
		t.Errorf("Ready() is true while restoring")
	}
	if code, body := srv.get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while restoring: %d %q, want %d", code, body, http.StatusServiceUnavailable)
	}

	gate.release()
	srv.waitCode("/readyz", http.StatusOK, 60*time.Second)
	st = r2.Status()
	if st.Restoring {
		t.Errorf("status still restoring once /readyz is ready")
	}
	if st.Stats.Restored < 50 {
		t.Errorf("restored %d changelog records, want at least one per key (50)", st.Stats.Restored)
	}

	// Counting goes on from the restored counts: every key ends at 20.
	env.Produce(in, first, first)
	env.WaitCount(out, 2*first, 60*time.Second)
	rs := env.Read(out)
	if len(rs) != 2*first {
		t.Fatalf("%d counts in %s, want %d", len(rs), out, 2*first)
	}
	last := map[string]int64{}
	lastOffset := map[string]int64{}
	for _, r := range rs {
		k := string(r.Key)
		if o, seen := lastOffset[k]; seen && o > r.Offset {
			continue
		}
		lastOffset[k] = r.Offset
		last[k] = int64(binary.BigEndian.Uint64(r.Value))
	}
	if len(last) != 50 {
		t.Errorf("%d keys counted, want 50", len(last))
	}
	for k, n := range last {
		if n != 2*first/50 {
			t.Errorf("key %s: final count %d, want %d", k, n, 2*first/50)
		}
	}
}

// countTopology counts the records of in per key into out, in the store
// "counts".
func countTopology(in, out string) *topology.Topology {
	t := topology.New("count")
	counts := topology.Count(topology.Source(t, in, serde.String(), serde.String()), "counts", serde.String())
	topology.To(counts, out, serde.String(), serde.Int64())
	return t
}

// fetchGate is a dialer that holds the response to the first Fetch
// request a client with the given client id sends, until release: the
// reader of that client waits for it, and so does whatever waits on that
// fetch.
type fetchGate struct {
	clientID []byte
	held     chan struct{} // closed once a fetch is being held
	released chan struct{}
	holdOnce sync.Once
	relOnce  sync.Once
}

func newFetchGate(clientID string) *fetchGate {
	return &fetchGate{clientID: []byte(clientID), held: make(chan struct{}), released: make(chan struct{})}
}

func (g *fetchGate) release() { g.relOnce.Do(func() { close(g.released) }) }

func (g *fetchGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, g: g}, nil
}

// gatedConn holds its reads once it wrote the gate's fetch request.
type gatedConn struct {
	net.Conn
	g     *fetchGate
	mu    sync.Mutex
	gated bool
}

// Write looks at the request's header: a Kafka request is a 4-byte size,
// a 2-byte API key (1 is Fetch), version, correlation id, then the
// client id.
func (c *gatedConn) Write(b []byte) (int, error) {
	if len(b) > 6 && binary.BigEndian.Uint16(b[4:6]) == 1 && bytes.Contains(b, c.g.clientID) {
		c.g.holdOnce.Do(func() {
			c.mu.Lock()
			c.gated = true
			c.mu.Unlock()
			close(c.g.held)
		})
	}
	return c.Conn.Write(b)
}

func (c *gatedConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	gated := c.gated
	c.mu.Unlock()
	if gated {
		<-c.g.released
	}
	return c.Conn.Read(b)
}
