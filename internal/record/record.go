// Package record holds what a record carries that both the graph and the
// Kafka seam name: its headers. It is a leaf, so internal/kafka need not
// import internal/graph to read or write a header.
package record

// Header is one record header: a key and a value, as Kafka carries it.
type Header struct {
	Key   string
	Value []byte
}
