package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// dedupTopology passes each event id once within retention.
func dedupTopology(in, out string, retention time.Duration) *topology.Topology {
	tp := topology.New("dedup")
	src := topology.Source(tp, in, serde.String(), serde.String())
	topology.To(topology.Dedup(src, "ids", topology.EventIDHeader("event-id"), retention), out, serde.String(), serde.String())
	return tp
}

func values(env *enginetest.Env, topic string) []string {
	var out []string
	for _, r := range env.Read(topic) {
		out = append(out, string(r.Value))
	}
	return out
}

// One record stamped 50 years ahead must not expire every remembered event
// id: stream time advances only to the wall clock plus the allowed skew, so
// a true duplicate right after it is still rejected.
func TestFarFutureTimestampDoesNotTurnDedupOff(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	// Kafka 4 refuses records stamped more than an hour ahead by default
	// (message.timestamp.after.max.ms); these topics take them.
	future := map[string]*string{"message.timestamp.after.max.ms": kadm.StringPtr("9223372036854775807")}
	env.CreateTopicConfigs(in, 1, future)
	env.CreateTopicConfigs(out, 1, future)
	now := time.Now().Truncate(time.Millisecond)
	env.ProduceRecords(
		orderRecord(in, "k", "e1", "first", now),
		orderRecord(in, "k", "e2", "from the future", now.AddDate(50, 0, 0)),
		orderRecord(in, "k", "e1", "first", now.Add(time.Second)),
	)
	r := runUntil(t, env, app, dedupTopology(in, out, 7*24*time.Hour), map[string]int{out: 2, app + "-rejected": 1})
	if got, want := values(env, out), []string{"first", "from the future"}; !slices.Equal(got, want) {
		t.Errorf("output %q, want %q", got, want)
	}
	if got, want := reasons(env.Read(app+"-rejected")), []string{"duplicate@ids"}; !slices.Equal(got, want) {
		t.Errorf("rejections %q, want %q", got, want)
	}
	if s := r.E.Stats(); s.Expired != 0 {
		t.Errorf("%d dedup entries expired, want none", s.Expired)
	}
}

// A task's stream time survives a restart (it is recovered from the dedup
// entries the changelog carries): after the restart, a record stamped ten
// days in the past is remembered for the retention from the task's stream
// time, so its duplicate, after a record that moves stream time on a
// minute, is still rejected. Without the stream time, the restarted task
// took the old stamp as its stream time, and the next record expired it.
func TestStreamTimeSurvivesARestart(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	tp := dedupTopology(in, out, time.Hour)
	t0 := time.Now().Add(-24 * time.Hour).Truncate(time.Millisecond)

	env.ProduceRecords(orderRecord(in, "k", "e1", "first", t0))
	runUntil(t, env, app, tp, map[string]int{out: 1}) // each run has a new state directory: the restart restores from the changelog

	env.ProduceRecords(
		orderRecord(in, "k", "e3", "late", t0.Add(-10*24*time.Hour)),
		orderRecord(in, "k", "x", "next", t0.Add(time.Minute)),
		orderRecord(in, "k", "e3", "late", t0.Add(-10*24*time.Hour)),
	)
	runUntil(t, env, app, tp, map[string]int{out: 3, app + "-rejected": 1})
	if got, want := values(env, out), []string{"first", "late", "next"}; !slices.Equal(got, want) {
		t.Errorf("output %q, want %q", got, want)
	}
	if got, want := reasons(env.Read(app+"-rejected")), []string{"duplicate@ids"}; !slices.Equal(got, want) {
		t.Errorf("rejections %q, want %q", got, want)
	}
}
