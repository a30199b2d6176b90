// Package copy is the built-in copy topology: every input record to the
// output topic, key and value unchanged, with the lineage header the runtime
// adds. `onceflow run copy` runs it; the demo and the benchmarks measure it.
package copy

import (
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// Topology copies input to output.
func Topology(input, output string) *topology.Topology {
	t := topology.New("copy")
	in := topology.Source(t, input, serde.Bytes(), serde.Bytes())
	topology.To(in, output, serde.Bytes(), serde.Bytes())
	return t
}
