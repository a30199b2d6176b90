package benchmarks

import (
	"fmt"
	"strings"

	"github.com/onceflow/onceflow/examples/orders"
	"github.com/onceflow/onceflow/statestore"
)

// DurabilityNote states what each system fsyncs and what it keeps, the
// differences a reader of onceflow's figures beside Kafka Streams' must
// weigh. Each line follows the code: onceflow's state store as the engine
// opens it (statestore.Open with the default Options), and the Kafka
// Streams peer's stores and configuration (peers/kstreams) on Kafka
// Streams 4.4.0's defaults. Markdown bullets; plain text reads the same.
func DurabilityNote() string {
	days := int(orders.Retention.Hours() / 24)
	def := statestore.Options{}.WithDefaults()
	lines := []string{
		"Durability and dedup, onceflow against the Kafka Streams peer (same broker, same input, both exactly-once through Kafka transactions):",
		"- onceflow fsyncs its local state at every commit: one Pebble database per replica holds every task's stores, " +
			"and each transaction's state changes are applied as one batch written with pebble.Sync (the write-ahead log is fsynced); " +
			"restore marks are synced too. Kafka Streams fsyncs no local log: its RocksDB stores are written with RocksDB's write-ahead log " +
			"turned off (RocksDBStore sets WriteOptions.setDisableWAL(true)), and the changelog topics are the durable copy of its state.",
		"- Both write every put and delete of a store to its changelog topic in the same transaction as the outputs " +
			"(the peer's stores are change-logged and not cached, as onceflow's are).",
		fmt.Sprintf("- onceflow (orders) keeps each event id for %d days of event time, with its first-seen time, source record and payload SHA-256, "+
			"plus a local expiry-index key; expired ids are deleted, tombstones in the changelog. The peer keeps each event id with its payload "+
			"SHA-256 forever (no expiry; the bench input never spans %d days).", days, days),
		fmt.Sprintf("- Memory: onceflow's Pebble has a %d MB block cache, %d MB memtables, bloom filters on every level and a read cache of %d entries; "+
			"the peer has one RocksDB per store per task (four per task in orders) on Kafka Streams' default RocksDB configuration.",
			def.CacheSize>>20, def.MemTableSize>>20, def.ReadCacheEntries),
	}
	return strings.Join(lines, "\n") + "\n"
}
