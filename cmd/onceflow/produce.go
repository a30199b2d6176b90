package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	kit "github.com/onceflow/onceflow/internal/cli"
	"github.com/onceflow/onceflow/internal/tooling/gen"
)

// ProduceCmd is `onceflow produce`.
type ProduceCmd struct {
	ToolFlags `embed:""`

	Topic         string  `name:"topic" short:"t" required:"" help:"Topic to write (created when missing)."`
	From          string  `name:"from" placeholder:"FILE|-" help:"Write your own records from FILE (- for standard input), one JSON object a line: {\"key\": \"k\", \"value\": \"text\", \"headers\": {\"h\": \"v\"}, \"partition\": 0, \"timestamp\": \"2024-05-01T12:00:00Z\"}; value_b64 or value_json instead of value, key_b64 instead of key (see the README)."`
	Transactional bool    `name:"transactional" help:"With --from: write every record in one transaction (a read_committed reader sees all or none). Default: the idempotent producer."`
	Records       int     `name:"records" short:"n" help:"How many generated records to write (with --example, injected ones included). Required without --from."`
	Partitions    int     `name:"partitions" default:"6" help:"Partitions of the topic when it is created."`
	Keys          int     `name:"keys" default:"1000" help:"Distinct keys (not with --example)."`
	ValueSize     int     `name:"value-size" default:"0" help:"Pad values to this many bytes (0: short values; not with --example). Above about 1 MiB the topic needs a raised max.message.bytes (--topic-config)."`
	Rate          float64 `name:"rate" placeholder:"N" help:"Generated records a second at most (0: as fast as the broker takes them; not with --from). On a terminal the progress bar shows the rate reached."`
	NoProgress    bool    `name:"no-progress" help:"Do not show a progress bar on stderr (none is shown when stderr is not a terminal)."`

	TopicConfig map[string]string `name:"topic-config" placeholder:"KEY=VALUE" help:"Config of the topic when it is created, e.g. max.message.bytes=4194304 (repeatable; not with --example)."`

	Example    string   `name:"example" enum:",orders" default:"" help:"Write the input of an example topology instead of plain records: orders."`
	Customers  *int     `name:"customers" placeholder:"N" help:"Customers (record keys) of --example orders. Default 200."`
	Duplicates *float64 `name:"duplicates" placeholder:"FRACTION" help:"Fraction of --records that replay an earlier record (--example orders). Default 0.10."`
	Conflicts  *float64 `name:"conflicts" placeholder:"FRACTION" help:"Fraction of --records that re-use an event id with another amount (--example orders). Default 0.01."`
	OutOfOrder *float64 `name:"out-of-order" placeholder:"FRACTION" help:"Fraction of --records that arrive after a newer version (--example orders). Default 0.05."`
	Seed       *int64   `name:"seed" placeholder:"N" help:"Seed of --example orders: the same flags write the same records. Default 1."`
	Truth      string   `name:"truth" type:"path" placeholder:"FILE" help:"Write the expected outcome of --example orders to FILE (for verify --truth)."`
}

// Validate rejects flags that do not apply to the chosen mode.
func (c *ProduceCmd) Validate() error {
	var errs []error
	switch {
	case c.From != "" && (c.Records != 0 || c.Example != "" || c.Keys != 1000 || c.ValueSize != 0):
		errs = append(errs, errors.New("--from writes the records it reads: --records, --example, --keys and --value-size do not apply"))
	case c.From == "" && c.Records <= 0:
		errs = append(errs, errors.New("--records (above 0) or --from is required"))
	case c.From == "" && c.Transactional:
		errs = append(errs, errors.New("--transactional needs --from"))
	}
	if !(c.Rate >= 0) || math.IsInf(c.Rate, 1) {
		errs = append(errs, errors.New("--rate must be a finite number, not negative"))
	}
	if c.Rate > 0 && c.From != "" {
		errs = append(errs, errors.New("--rate paces generated records: not with --from"))
	}
	if c.Example == "" {
		for _, f := range []struct {
			set  bool
			name string
		}{
			{c.Customers != nil, "--customers"}, {c.Duplicates != nil, "--duplicates"},
			{c.Conflicts != nil, "--conflicts"}, {c.OutOfOrder != nil, "--out-of-order"},
			{c.Seed != nil, "--seed"}, {c.Truth != "", "--truth"},
		} {
			if f.set {
				errs = append(errs, fmt.Errorf("%s needs --example orders", f.name))
			}
		}
	} else if c.Keys != 1000 || c.ValueSize != 0 || len(c.TopicConfig) > 0 {
		errs = append(errs, fmt.Errorf("--keys, --value-size and --topic-config do not apply to --example %s", c.Example))
	}
	return errors.Join(errs...)
}

// Run writes the records and prints a summary.
func (c *ProduceCmd) Run(env *Env) error {
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	if c.From != "" {
		return c.runFrom(env, opts)
	}
	var progress io.Writer = env.Stderr
	if c.NoProgress || !kit.IsTerminal(env.Stderr) {
		progress = nil // no bar frames in a pipe or a log file
	}
	if c.Example == "orders" {
		return c.runOrders(env, progress, opts)
	}
	res, err := gen.Produce(env.Ctx, gen.Config{
		Brokers:       c.BrokerList(),
		ClientOptions: opts,
		Topic:         c.Topic,
		Records:       c.Records,
		Partitions:    c.Partitions,
		Keys:          c.Keys,
		ValueSize:     c.ValueSize,
		TopicConfigs:  c.TopicConfig,
		Rate:          c.Rate,
		Progress:      progress,
		Logger:        env.Logger,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "produced %d records to %s (%d partitions) in %s: %.0f records/s (run %s)\n",
		res.Records, c.Topic, res.Partitions, res.Duration.Round(time.Millisecond), res.RecordsPerSec, res.RunID)
	return nil
}

// runFrom writes the records of the --from file.
func (c *ProduceCmd) runFrom(env *Env, opts []kgo.Opt) error {
	in := env.Stdin
	if c.From != "-" {
		f, err := os.Open(c.From)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	recs, err := gen.ParseLines(in)
	if err != nil {
		return fmt.Errorf("--from %s: %w", c.From, err)
	}
	res, err := gen.ProduceLines(env.Ctx, gen.LinesConfig{
		Brokers:       c.BrokerList(),
		ClientOptions: opts,
		Topic:         c.Topic,
		Records:       recs,
		Partitions:    c.Partitions,
		TopicConfigs:  c.TopicConfig,
		Transactional: c.Transactional,
		Logger:        env.Logger,
	})
	if err != nil {
		return err
	}
	mode := "idempotent"
	if c.Transactional {
		mode = "in one transaction"
	}
	fmt.Fprintf(env.Stdout, "produced %d records to %s (%d partitions), %s\n", res.Records, c.Topic, res.Partitions, mode)
	return nil
}

func (c *ProduceCmd) runOrders(env *Env, progress io.Writer, opts []kgo.Opt) error {
	began := time.Now()
	truth, err := gen.ProduceOrders(env.Ctx, gen.OrdersConfig{
		Brokers:        c.BrokerList(),
		ClientOptions:  opts,
		Topic:          c.Topic,
		Events:         c.Records,
		Partitions:     c.Partitions,
		Customers:      orDefault(c.Customers, gen.DefaultCustomers),
		DuplicateRate:  orDefault(c.Duplicates, gen.DefaultDuplicateRate),
		ConflictRate:   orDefault(c.Conflicts, gen.DefaultConflictRate),
		OutOfOrderRate: orDefault(c.OutOfOrder, gen.DefaultOutOfOrderRate),
		Seed:           orDefault(c.Seed, 1),
		Rate:           c.Rate,
		Progress:       progress,
		Logger:         env.Logger,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "produced %d order events to %s (%d partitions, %d customers, seed %d) in %s\n",
		truth.EventsTotal, truth.Topic, truth.Partitions, truth.Customers, truth.Seed, time.Since(began).Round(time.Millisecond))
	fmt.Fprintf(env.Stdout, "truth: %d unique events, %d accepted; rejections: %d duplicate, %d conflict, %d stale; %d customer totals\n",
		truth.EventsUnique, truth.Accepted, truth.DuplicatesInjected, truth.ConflictsInjected, truth.StaleInjected, len(truth.Totals))
	if c.Truth != "" {
		if err := truth.WriteFile(c.Truth); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "truth written to %s\n", c.Truth)
	}
	return nil
}

func orDefault[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
