package topics_test

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/topics"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
)

// A broker's metadata may lag the controller's answer to a create: the
// next command reads the topic as absent. Create waits until metadata
// shows the topic, so `topics create` followed by any command finds it.
func TestCreateWaitsUntilMetadataShowsTheTopic(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm, err := topics.Connect(ctx, b.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	// After the create, the first five metadata requests that name the
	// topic leave it out, as a lagging broker does.
	const topic, lagging = "fresh", 5
	var created atomic.Bool
	var hidden atomic.Int32
	c := b.Cluster()
	c.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.MetadataRequest)
		if !created.Load() || len(r.Topics) != 1 || r.Topics[0].Topic == nil || *r.Topics[0].Topic != topic || hidden.Load() >= lagging {
			return nil, nil, false
		}
		hidden.Add(1)
		// The broker knows of itself and of no such topic yet.
		resp := r.ResponseKind().(*kmsg.MetadataResponse)
		for _, a := range b.Addrs() {
			host, port, _ := net.SplitHostPort(a)
			p, _ := strconv.Atoi(port)
			mb := kmsg.NewMetadataResponseBroker()
			mb.NodeID, mb.Host, mb.Port = 0, host, int32(p)
			resp.Brokers = append(resp.Brokers, mb)
		}
		resp.ControllerID = 0
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.CreateTopics), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		created.Store(true) // the create itself is handled as usual
		return nil, nil, false
	})

	if err := adm.Create(ctx, topics.Spec{Name: topic, Partitions: 3, Replication: -1}); err != nil {
		t.Fatal(err)
	}
	d, err := adm.Describe(ctx, topic)
	if err != nil {
		t.Fatalf("describe right after create: %v (metadata left the topic out %d times)", err, hidden.Load())
	}
	if d.Partitions != 3 {
		t.Fatalf("describe right after create: %d partitions, want 3", d.Partitions)
	}
	if hidden.Load() != lagging {
		t.Fatalf("metadata left the topic out %d times, want %d", hidden.Load(), lagging)
	}
}
