// Command mergecount counts the records of each key over two topics merged
// into one stream, and writes every new count (as decimal text) to an
// output topic. It is a user program on onceflow's public API only: run
// it as several replicas of one application, each with its own instance
// id, and every key's last count is the number of its records in both
// topics, whatever replicas join, leave or are killed meanwhile.
//
//	mergecount -brokers 127.0.0.1:9092 -app counts -instance r1 -a clicks-eu -b clicks-us -out clicks-per-user
//
// The two topics must have the same partition count and be keyed alike
// (a record's key decides its partition): a task then reads partition p
// of both, and onceflow assigns a task's partitions to one replica.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// Topology counts the records of each key of a and b together, into out.
func Topology(a, b, out string) *topology.Topology {
	t := topology.New("mergecount")
	merged := topology.Merge(
		topology.Source(t, a, serde.String(), serde.String()),
		topology.Source(t, b, serde.String(), serde.String()))
	counts := topology.GroupByKey(merged, "by-key", serde.String(), serde.String()).Count("counts")
	text := topology.MapValues(counts, func(n int64) (string, error) { return strconv.FormatInt(n, 10), nil })
	topology.To(text, out, serde.String(), serde.String())
	return t
}

// options are the command's flags.
type options struct {
	brokers, app, instance string
	a, b, out, stateDir    string
	session                time.Duration
}

func (o *options) flags(fs *flag.FlagSet) {
	fs.StringVar(&o.brokers, "brokers", "127.0.0.1:9092", "bootstrap brokers, comma-separated")
	fs.StringVar(&o.app, "app", "mergecount", "application id (the consumer group)")
	fs.StringVar(&o.instance, "instance", os.Getenv("HOSTNAME"), "instance id: stable per replica, unique among live ones")
	fs.StringVar(&o.a, "a", "ma", "first input topic")
	fs.StringVar(&o.b, "b", "mb", "second input topic")
	fs.StringVar(&o.out, "out", "counts", "output topic")
	fs.StringVar(&o.stateDir, "state-dir", "", "state directory (default: in memory, restored from the changelog)")
	fs.DurationVar(&o.session, "session-timeout", 0, "group session timeout (default: the processor's)")
}

// run is one replica until ctx ends.
func run(ctx context.Context, o options) error {
	p, err := processor.New(processor.Config{
		Brokers:        strings.Split(o.brokers, ","),
		ApplicationID:  o.app,
		InstanceID:     o.instance,
		StateDir:       o.stateDir,
		SessionTimeout: o.session,
	}, Topology(o.a, o.b, o.out))
	if err != nil {
		return err
	}
	return p.Run(ctx)
}

func main() {
	var o options
	o.flags(flag.CommandLine)
	flag.Parse()
	ctx, stop := signalContext()
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// signalContext ends on SIGINT or SIGTERM: the replica then commits or
// aborts its open transaction and leaves the group.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
