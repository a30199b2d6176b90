package main

import (
	"fmt"
	"strings"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
)

// BrokerCmd is `onceflow broker`.
type BrokerCmd struct {
	Addr             string `name:"addr" default:"127.0.0.1:9092" help:"Address to listen on (loopback; port 0 picks one)."`
	DataDir          string `name:"data-dir" type:"path" help:"Keep the broker's state in this directory across clean restarts (default: in memory). A directory left by a killed broker is refused."`
	WipeUnclean      bool   `name:"wipe-unclean-data-dir" help:"Empty a --data-dir left by a killed or crashed broker instead of refusing it."`
	AutoCreateTopics bool   `name:"auto-create-topics" help:"Create topics that clients ask for and that do not exist."`
}

// Run starts the broker and blocks until the context ends.
func (c *BrokerCmd) Run(env *Env) error {
	b, err := embedded.Start(embedded.Config{
		Addr:               c.Addr,
		DataDir:            c.DataDir,
		WipeUncleanDataDir: c.WipeUnclean,
		AutoCreateTopics:   c.AutoCreateTopics,
		Logger:             env.Logger.Named("broker"),
	})
	if err != nil {
		return err
	}
	storage := "in memory"
	if c.DataDir != "" {
		storage = "data in " + c.DataDir
	}
	fmt.Fprintf(env.Stdout, "broker listening on %s (%s); stop with Ctrl-C\n", strings.Join(b.Addrs(), ","), storage)
	<-env.Ctx.Done()
	b.Close()
	fmt.Fprintln(env.Stdout, "broker stopped")
	return nil
}
