// Package topology is the graph a user builds in Go: typed sources with
// codecs, stateless processors (map, filter, flat-map, a general process
// function) and topic outputs.
//
// Building never panics. Mistakes (a missing codec, a nil function, a topic
// read twice) accumulate and come back together from Validate, Describe or
// the runtime's constructor.
//
// Stages that change types are package-level functions, since Go methods
// cannot take type parameters:
//
//	t := topology.New("orders")
//	in := topology.Source(t, "orders", serde.String(), serde.JSON[Order]())
//	big := topology.Filter(in, func(k string, o Order) bool { return o.Amount > 100 })
//	topology.To(big, "big-orders", serde.String(), serde.JSON[Order]())
//
// Every output record carries the header onceflow-source naming the input
// record (topic/partition/offset) it came from. The runtime adds it.
//
// Records of one sub-topology (a connected part of the graph) are processed
// per partition: its source topics must have the same partition count.
package topology
