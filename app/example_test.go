package app_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// Upper writes each record's value in capitals.
func Upper() *topology.Topology {
	t := topology.New("upper")
	in := topology.Source(t, "words", serde.String(), serde.String())
	up := topology.MapValues(in, func(v string) (string, error) { return strings.ToUpper(v), nil })
	topology.To(up, "upper-words", serde.String(), serde.String())
	return t
}

// A team's whole main function.
func ExampleMain() {
	app.Main(Upper())
}

// Run is what Main runs, with the arguments and writers given.
func ExampleConfig_Run() {
	c := app.Config{Name: "words", Topologies: []*topology.Topology{Upper()}}
	code := c.Run(context.Background(), []string{"describe"}, os.Stdin, os.Stdout, os.Stderr)
	fmt.Println("exit", code)
	// Output:
	// topology upper
	//   sub-topology 0 (sources: words)
	//     source source-words <- topic words [string/string]
	//       map-values map-values-1
	//         sink sink-1 -> topic upper-words [string/string]
	// exit 0
}
