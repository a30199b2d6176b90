// Package compile hands a topology's executable graph to the runtime and
// the test driver without a public method on the topology: the topology
// package registers its compiler here when it is initialised, and nothing
// writes it after that.
package compile

import (
	"errors"

	"github.com/onceflow/onceflow/internal/graph"
)

var compiler func(t any) (*graph.Graph, error)

// Register sets the compiler. The topology package calls it from init.
func Register(fn func(t any) (*graph.Graph, error)) { compiler = fn }

// Graph validates t, a *topology.Topology, and returns its graph.
func Graph(t any) (*graph.Graph, error) {
	if compiler == nil {
		return nil, errors.New("compile: no topology compiler registered")
	}
	return compiler(t)
}
