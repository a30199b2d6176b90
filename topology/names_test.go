package topology_test

import (
	"context"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// A bad store name is reported as the store's name (not as a topic
// name), and a bad sink name as the sink's, with the topics it names
// (outbox, dead letters, ledger), not a changelog.
func TestStoreAndSinkNameErrorsNameTheRightThings(t *testing.T) {
	nop := sinks.Func(func(context.Context, sinks.Delivery) error { return nil })
	for _, tc := range []struct {
		name  string
		build func(tp *topology.Topology, in topology.Stream[string, string])
		want  []string
		lose  []string
	}{
		{"store with a space", func(tp *topology.Topology, in topology.Stream[string, string]) {
			topology.Store(tp, "my store", serde.String(), serde.String())
		}, []string{`store "my store": name has ' '`, `the changelog topic "<application id>-my store-changelog"`}, []string{"topic name \"my store\""}},
		{"empty store", func(tp *topology.Topology, in topology.Stream[string, string]) {
			topology.Store(tp, "", serde.String(), serde.String())
		}, []string{`store: name is empty`}, []string{"topic name is empty"}},
		{"sink with a slash", func(tp *topology.Topology, in topology.Stream[string, string]) {
			topology.ToSink(in, "web/hook", nop, serde.String(), nil)
		}, []string{`to sink "web/hook": name has '/'`, `"<application id>-sink-web/hook"`, "dead-letter", "ledger"}, []string{"changelog topic", "topic name \"web/hook\""}},
		{"empty sink", func(tp *topology.Topology, in topology.Stream[string, string]) {
			topology.ToSink(in, "", nop, serde.String(), nil)
		}, []string{`to sink: name is empty: a sink needs a name that stays the same across releases (its outbox, dead-letter and ledger topics are named after it)`}, []string{"stateful stage", "changelog"}},
		{"reduce with a space", func(tp *topology.Topology, in topology.Stream[string, string]) {
			topology.To(topology.Count(in, "per key", serde.String()), "counts", serde.String(), serde.Int64())
		}, []string{`reduce "per key": name has ' '`, `changelog topic "<application id>-per key-changelog"`}, []string{"topic name \"per key\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := topology.New("app")
			in := topology.Source(tp, "in", serde.String(), serde.String())
			topology.To(in, "out", serde.String(), serde.String())
			tc.build(tp, in)
			err := tp.Validate()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			for _, l := range tc.lose {
				if strings.Contains(err.Error(), l) {
					t.Errorf("error has %q:\n%v", l, err)
				}
			}
		})
	}
}
