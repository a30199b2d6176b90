package topology

import (
	"fmt"
	"strings"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
)

// ToSink delivers the stream to an external system (an HTTP endpoint, a
// database, any side effect) exactly once per record, where the Kafka
// transaction ends.
//
// Inside the processing transaction each record becomes a delivery
// request in the outbox topic "<application id>-sink-<name>": the payload
// (value encoded with payload) as the record's value, the record's key
// (see below) as its key, so that the outbox is partitioned, and
// deliveries are ordered, by the record key, and the idempotency key in
// the header "onceflow-idempotency-key". The sink runner (see package
// sinks) reads the outbox read_committed and calls sink with that key.
//
// key returns a record's idempotency key: the same on every replay of the
// record, and different for every delivery (a sink runner skips a key it
// settled before, and dead-letters one that comes back with another
// payload as a conflict). Nil: "<name>:<topic>/<partition>/<offset>",
// the coordinates of the record the replica consumed, on the topic it
// read it from: the input topic, or the repartition or through topic a
// record of a fan-out was read back from (each then has a key of its
// own, while its lineage still names the input record). When one consumed
// record makes several deliveries to the sink (a FlatMap, the final
// results of several windows it closes), the second and later ones end
// with "#1", "#2", ... A punctuation's deliveries start from
// "<name>:punctuator/<stage>/<task>/<timer>@<time of the firing>" (RFC
// 3339, UTC). A key from an event id (the stream's Dedup id, for
// instance) survives the input being written twice upstream, which
// coordinates do not: prefer it when there is one.
//
// The outbox key is the record key as text: a string or []byte key as is,
// any other key formatted with fmt (%v).
//
// name is the sink's name in the application: it names the outbox, the
// dead-letter topic "<application id>-sink-<name>-dlq" and the delivery
// ledger, so it must stay the same across releases, and be a valid topic
// name part. The runtime creates the topics.
func ToSink[K, V any](s Stream[K, V], name string, sink sinks.Sink, payload serde.Codec[V], key func(K, V) string) {
	if !s.valid("to sink " + name) {
		return
	}
	t := s.t
	if strings.TrimSpace(name) == "" {
		t.errorf("to sink: name is empty: a sink needs a name that stays the same across releases (its outbox, dead-letter and ledger topics are named after it)")
	} else if err := checkName(name); err != nil {
		t.errorf("to sink %q: %v (it names the outbox \"<application id>-sink-%s\" and its dead-letter and ledger topics)", name, err, name)
	}
	if sink == nil {
		t.errorf("to sink %q: sink is nil", name)
	}
	if payload == nil {
		t.errorf("to sink %q: payload codec is nil", name)
	}
	topic := "sink-" + name
	for _, n := range t.nodes {
		if n.Outbox != nil && n.Topic == topic {
			t.errorf("to sink %q: the sink is declared twice", name)
		}
	}
	n := t.add(graph.KindSink, "external-sink", "external-sink-"+name, s.node)
	n.Topic = topic
	n.Internal = true
	n.Outbox = &graph.Outbox{Sink: name, Deliverer: sink}
	if key != nil {
		n.Outbox.Key = func(k, v any) (string, error) { return key(as[K](k), as[V](v)), nil }
	}
	if payload == nil {
		return
	}
	n.Format = "key/" + payload.Name()
	n.Encode = func(k, v any) ([]byte, []byte, error) {
		vb, err := payload.Encode(as[V](v))
		if err != nil {
			return nil, nil, fmt.Errorf("payload: %w", err)
		}
		return outboxKey(as[K](k)), vb, nil
	}
}

// outboxKey is a record key as text, for the outbox.
func outboxKey(k any) []byte {
	switch k := k.(type) {
	case string:
		return []byte(k)
	case []byte:
		return k
	case nil:
		return nil
	}
	return fmt.Appendf(nil, "%v", k)
}
