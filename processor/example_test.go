package processor_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"

	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// Running a replica needs a broker, so this example is compiled but not run.
func Example() {
	t := topology.New("shout")
	in := topology.Source(t, "messages", serde.String(), serde.String())
	loud := topology.MapValues(in, func(v string) (string, error) { return strings.ToUpper(v), nil })
	topology.To(loud, "loud-messages", serde.String(), serde.String())

	app, err := processor.New(processor.Config{
		Brokers:       []string{"localhost:9092"},
		ApplicationID: "shout",
		InstanceID:    "replica-1",
	}, t)
	if err != nil {
		log.Fatal(err) // every config and topology problem, joined
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := app.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

func ExampleConfig_Validate() {
	err := processor.Config{Brokers: []string{"localhost:9092"}, ApplicationID: "my app"}.Validate()
	fmt.Println(err)
	// Output:
	// application id "my app": only letters, digits, '.', '_' and '-'
	// instance id is empty: give each replica a stable, unique id
}

func ExampleNew() {
	_, err := processor.New(processor.Config{}, nil)
	fmt.Println(err)
	// Output:
	// processor: config: no brokers given
	// processor: config: application id is empty
	// processor: config: instance id is empty: give each replica a stable, unique id
	// processor: topology is nil
}
