// Package consume tails a topic for `onceflow consume`: records read
// read_committed (or not) from the earliest or latest offset, an offset or
// a time, written as JSON lines with their partition, offset, timestamp,
// headers, and key and value decoded by a named codec of package serde.
// A rejected-records topic adds each record's reason, node, error and
// lineage as fields of their own. Without Follow it stops at the ends the
// topic had when it started (the last stable offsets read_committed).
package consume
