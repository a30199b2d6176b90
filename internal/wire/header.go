package wire

// The record header: what a record carries that both the graph and the
// Kafka seam name, so internal/kafka need not import internal/graph to read
// or write a header.

// Header is one record header: a key and a value, as Kafka carries it.
type Header struct {
	Key   string
	Value []byte
}
