//go:build kafka

package engine_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
)

// An input topic that takes records stamped 50 years ahead, an output
// topic with Kafka's default (message.timestamp.after.max.ms, 1 h in Kafka
// 4): the copy of such a record can never be produced. It must be
// rejected with its reason and lineage, and the records around it copied,
// without an aborted transaction; before, every transaction holding it
// aborted and the replica stopped after five ("the same input keeps
// failing"). The embedded broker does not check timestamps.
func TestOutputTimestampTheTopicRefusesIsRejected(t *testing.T) {
	if os.Getenv("ONCEFLOW_KAFKA_BROKERS") == "" {
		t.Skip("needs a real broker (the embedded one does not check timestamps): set ONCEFLOW_KAFKA_BROKERS")
	}
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopicConfigs(in, 1, map[string]*string{"message.timestamp.after.max.ms": kadm.StringPtr("9223372036854775807")})
	env.CreateTopic(out, 1)
	now := time.Now()
	rec := func(v string, ts time.Time) *kgo.Record {
		return &kgo.Record{Topic: in, Key: []byte("k"), Value: []byte(v), Timestamp: ts}
	}
	var rs []*kgo.Record
	for i := range 20 {
		if i == 10 {
			rs = append(rs, rec("from the future", now.AddDate(50, 0, 0)))
		}
		rs = append(rs, rec("v"+string(rune('a'+i)), now))
	}
	env.ProduceRecords(rs...)

	r := env.Start(env.Config(app, "r1"), compile(t, copyex.Topology(in, out)))
	env.WaitCount(out, 20, 60*time.Second)
	env.WaitCount(app+"-rejected", 1, 60*time.Second)
	if err, done := r.Wait(300 * time.Millisecond); done {
		t.Fatalf("the replica stopped: %v", err)
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	rejected := env.Read(app + "-rejected")
	if len(rejected) != 1 {
		t.Fatalf("%d rejected records, want 1", len(rejected))
	}
	rj := rejected[0]
	if got := rj.Headers[wire.HeaderRejectReason]; got != wire.ReasonTimestampOutOfRange {
		t.Errorf("reason %q, want %q", got, wire.ReasonTimestampOutOfRange)
	}
	if got := rj.Headers[wire.HeaderSource]; got != in+"/0/10" {
		t.Errorf("lineage %q, want %s/0/10", got, in)
	}
	if got := rj.Headers[wire.HeaderRejectError]; !strings.Contains(got, "message.timestamp.after.max.ms") {
		t.Errorf("error %q does not name message.timestamp.after.max.ms", got)
	}
	if n := len(env.Read(out)); n != 20 {
		t.Errorf("output has %d records, want 20", n)
	}
	rep := env.VerifySources(in, out, app+"-rejected")
	if rep.Input != 21 {
		t.Errorf("input %d records, want 21", rep.Input)
	}
	s := r.E.Stats()
	t.Logf("sessions %d, aborted %d, committed %d, rejected %d", s.Sessions, s.Aborted, s.Committed, s.Rejected)
	if s.Aborted != 0 || s.Rejected != 1 {
		t.Errorf("stats %+v: want no abort and one rejection", s)
	}
}
