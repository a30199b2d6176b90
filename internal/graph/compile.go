package graph

// The compiler hands a topology's executable graph to the runtime and the
// test driver without a public method on the topology: the topology package
// registers its compiler here when it is initialised, and nothing writes it
// after that.

import "errors"

var compiler func(t any) (*Graph, error)

// RegisterCompiler sets the compiler. The topology package calls it from
// init.
func RegisterCompiler(fn func(t any) (*Graph, error)) { compiler = fn }

// Compile validates t, a *topology.Topology, and returns its graph.
func Compile(t any) (*Graph, error) {
	if compiler == nil {
		return nil, errors.New("graph: no topology compiler registered")
	}
	return compiler(t)
}
