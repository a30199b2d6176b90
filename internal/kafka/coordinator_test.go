package kafka

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
)

// A group coordinator that moved (a broker killed, the offsets topic's
// leader elsewhere) answers NOT_COORDINATOR inside the offset commit's
// response, not as a transport error. The producer must look the
// coordinator up again, or every later commit goes to the old one.
// Modelled here by a broker that refuses offset commits until the
// client asks for the coordinator again.
func TestCommitLooksUpAMovedCoordinator(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := Client{Brokers: b.Addrs()}
	admin, err := Connect(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic, group = "moved-coordinator", "moved-coordinator-group"
	if _, err := admin.Ensure(map[string]int32{topic: 1}, nil); err != nil {
		t.Fatal(err)
	}
	p, err := NewProducer(client, Timeouts{}, "", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	g := GroupMetadata{GroupID: group, GenerationID: -1}
	if err := p.CommitOffsets(ctx, map[string]map[int32]int64{topic: {0: 1}}, g); err != nil {
		t.Fatal(err)
	}

	var moved, lookups atomic.Bool
	moved.Store(true)
	c := b.Cluster()
	c.ControlKey(int16(kmsg.FindCoordinator), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		lookups.Store(true)
		moved.Store(false)
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !moved.Load() {
			return nil, nil, false
		}
		req := r.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.NotCoordinator.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})

	var errs []error
	for i := range 3 {
		err := p.CommitOffsets(ctx, map[string]map[int32]int64{topic: {0: int64(2 + i)}}, g)
		if err == nil {
			t.Logf("commit accepted after %d refusals: %v", len(errs), errs)
			return
		}
		errs = append(errs, err)
	}
	t.Fatalf("3 commits refused by a coordinator that moved, looked up again: %v: %v", lookups.Load(), errs)
}
