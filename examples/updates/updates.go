// Package updates is a small stateful topology, the README's example of a
// test without a broker: order updates pass a dedup gate (event id header)
// and a version gate (per order), and are counted per customer.
package updates

import (
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// Update is one version of an order.
type Update struct {
	Order   string `json:"order"`
	Version uint64 `json:"version"`
}

// Topology counts, per customer (the record key), the order updates that
// are neither replays nor stale.
func Topology() *topology.Topology {
	t := topology.New("updates")
	in := topology.Source(t, "updates", serde.String(), serde.JSON[Update]())
	fresh := topology.Dedup(in, "event-ids", topology.EventIDHeader("event-id"), 24*time.Hour)
	current := topology.LatestVersion(fresh, "versions", func(_ string, u Update) (string, uint64) { return u.Order, u.Version })
	counts := topology.Count(current, "per-customer", serde.String())
	topology.To(counts, "update-counts", serde.String(), serde.Int64())
	return t
}
