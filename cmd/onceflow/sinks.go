package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
)

// SinksCmd is `onceflow sinks`.
type SinksCmd struct {
	Status  SinksStatusCmd  `cmd:"" help:"Count each sink's outbox records not read yet by its runners (unread: no ledger entry yet) and its deliveries by ledger state (pending, succeeded, failed, dead-lettered, unknown)."`
	Unknown SinksUnknownCmd `cmd:"" help:"Deliveries parked as unknown (an attempt to a sink that is not idempotent got no answer)."`
}

// appFlags name the application whose sinks a command reads.
type appFlags struct {
	ToolFlags `embed:""`
	AppID     string `name:"app-id" required:"" help:"The topology's application id."`
	JSON      bool   `name:"json" help:"Print JSON (one object, or one per line for lists)."`
}

// SinksStatusCmd is `onceflow sinks status`.
type SinksStatusCmd struct {
	appFlags `embed:""`
	Sink     []string `name:"sink" help:"Only these sinks (default: every sink with a ledger or dead-letter topic)."`
}

// Run prints the counts.
func (c *SinksStatusCmd) Run(env *Env) error {
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	sts, err := sinkadmin.StatusOf(env.Ctx, c.BrokerList(), c.AppID, c.Sink, opts...)
	if err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(env.Stdout).Encode(sts)
	}
	if len(sts) == 0 {
		fmt.Fprintf(env.Stdout, "no sinks of %s have a ledger yet\n", c.AppID)
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "SINK\tUNREAD\tDELIVERIES")
	for _, s := range sinkrunner.States {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(string(s)))
	}
	fmt.Fprintln(tw, "\tIN-FLIGHT")
	for _, st := range sts {
		unread := fmt.Sprint(st.Unread)
		if st.UnreadEstimated {
			unread = "<=" + unread
		}
		fmt.Fprintf(tw, "%s\t%s\t%d", st.Sink, unread, st.Deliveries)
		for _, s := range sinkrunner.States {
			fmt.Fprintf(tw, "\t%d", st.States[string(s)])
		}
		fmt.Fprintf(tw, "\t%d\n", st.InFlight)
	}
	return tw.Flush()
}

// SinksUnknownCmd is `onceflow sinks unknown`.
type SinksUnknownCmd struct {
	List    SinksUnknownListCmd    `cmd:"" help:"List a sink's deliveries parked as unknown."`
	Resolve SinksUnknownResolveCmd `cmd:"" help:"Settle deliveries parked as unknown (the keys given, or --all): as succeeded (never sent), failed (dead-lettered) or retry (sent again under the same key)."`
}

// SinksUnknownResolveCmd is `onceflow sinks unknown resolve`.
type SinksUnknownResolveCmd struct {
	appFlags `embed:""`
	Sink     string   `name:"sink" required:"" help:"The sink."`
	Keys     []string `arg:"" name:"key" optional:"" help:"Idempotency keys of the deliveries to resolve (or --all)."`
	All      bool     `name:"all" help:"Resolve every delivery of the sink parked as unknown."`
	As       string   `name:"as" required:"" enum:"succeeded,failed,retry" help:"The outcome: succeeded, failed or retry."`
}

// Run writes the resolve commands to the sink's outbox, in one batch
// (one read of the ledger; nothing written when a key is refused).
func (c *SinksUnknownResolveCmd) Run(env *Env) error {
	if err := keysOrAll(c.Keys, c.All); err != nil {
		return err
	}
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	var cmds []sinkadmin.Command
	if c.All {
		cmds, err = sinkadmin.ResolveAll(env.Ctx, c.BrokerList(), c.AppID, c.Sink, func(sinkadmin.Delivery) string { return c.As }, opts...)
	} else {
		cmds, err = sinkadmin.ResolveKeys(env.Ctx, c.BrokerList(), c.AppID, c.Sink, c.Keys, c.As, opts...)
	}
	if perr := printCommands(env, c.JSON, cmds); perr != nil {
		return perr
	}
	return err
}

// keysOrAll refuses a command given both keys and --all, or neither.
func keysOrAll(keys []string, all bool) error {
	switch {
	case all && len(keys) > 0:
		return errors.New("give idempotency keys or --all, not both")
	case !all && len(keys) == 0:
		return errors.New("give idempotency keys, or --all")
	}
	return nil
}

// printCommands reports the commands of a batch, and (as text) how many
// were written.
func printCommands(env *Env, asJSON bool, cs []sinkadmin.Command) error {
	for _, c := range cs {
		if err := printCommand(env, asJSON, c); err != nil {
			return err
		}
	}
	if !asJSON {
		fmt.Fprintf(env.Stdout, "%d commands written\n", len(cs))
	}
	return nil
}

// printCommand reports a command written to an outbox.
func printCommand(env *Env, asJSON bool, c sinkadmin.Command) error {
	if asJSON {
		return json.NewEncoder(env.Stdout).Encode(c)
	}
	what := c.Command
	if c.As != "" {
		what += " as " + c.As
	}
	fmt.Fprintf(env.Stdout, "%s of %s written to %s/%d at offset %d; the sink runner that owns the partition applies it in order\n",
		what, c.Key, c.Outbox, c.Partition, c.Offset)
	return nil
}

// SinksUnknownListCmd is `onceflow sinks unknown list`.
type SinksUnknownListCmd struct {
	appFlags `embed:""`
	Sink     string `name:"sink" required:"" help:"The sink."`
}

// Run lists the parked deliveries.
func (c *SinksUnknownListCmd) Run(env *Env) error {
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	ds, err := sinkadmin.Unknown(env.Ctx, c.BrokerList(), c.AppID, c.Sink, opts...)
	if err != nil {
		return err
	}
	return listing(env, c.JSON, ds, "IDEMPOTENCY KEY\tATTEMPTS\tSOURCE\tUPDATED\tLAST ERROR", "unknown", func(d sinkadmin.Delivery) string {
		return fmt.Sprintf("%s\t%d\t%s\t%s\t%s", d.Key, d.Attempts, d.Source, d.Updated.UTC().Format("2006-01-02T15:04:05Z"), d.LastError)
	})
}

// DLQCmd is `onceflow dlq`.
type DLQCmd struct {
	List    DLQListCmd    `cmd:"" help:"List a sink's dead letters, each with its delivery's current state (redriven ones marked)."`
	Show    DLQShowCmd    `cmd:"" help:"Show one dead letter, payload included."`
	Redrive DLQRedriveCmd `cmd:"" help:"Deliver dead letters again (the keys given, or --all), each under its idempotency key (once, with a fresh retry budget)."`
}

// DLQRedriveCmd is `onceflow dlq redrive`.
type DLQRedriveCmd struct {
	appFlags `embed:""`
	Sink     string   `name:"sink" required:"" help:"The sink."`
	Keys     []string `arg:"" name:"key" optional:"" help:"Idempotency keys of the dead letters to redrive (or --all)."`
	All      bool     `name:"all" help:"Redrive every dead letter of the sink whose delivery is still dead-lettered."`
}

// Run writes the redrive commands to the sink's outbox, in one batch (one
// read of the ledger and of the dead-letter topic; nothing written when a
// key is refused).
func (c *DLQRedriveCmd) Run(env *Env) error {
	if err := keysOrAll(c.Keys, c.All); err != nil {
		return err
	}
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	var cmds []sinkadmin.Command
	if c.All {
		cmds, err = sinkadmin.RedriveAll(env.Ctx, c.BrokerList(), c.AppID, c.Sink, nil, opts...)
	} else {
		cmds, err = sinkadmin.RedriveKeys(env.Ctx, c.BrokerList(), c.AppID, c.Sink, c.Keys, opts...)
	}
	if perr := printCommands(env, c.JSON, cmds); perr != nil {
		return perr
	}
	return err
}

// DLQListCmd is `onceflow dlq list`.
type DLQListCmd struct {
	appFlags `embed:""`
	Sink     string `name:"sink" required:"" help:"The sink."`
}

// Run lists the dead letters.
func (c *DLQListCmd) Run(env *Env) error {
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	dls, err := sinkadmin.DeadLetters(env.Ctx, c.BrokerList(), c.AppID, c.Sink, opts...)
	if err != nil {
		return err
	}
	return listing(env, c.JSON, dls, "PARTITION/OFFSET\tIDEMPOTENCY KEY\tSTATE\tCLASS\tATTEMPTS\tERROR", "dead letters", func(d sinkadmin.DeadLetter) string {
		return fmt.Sprintf("%d/%d\t%s\t%s\t%s\t%d\t%s", d.Partition, d.Offset, d.Key, stateNow(d), d.Class, d.Attempts, d.Error)
	})
}

// stateNow is a dead letter's state column: the ledger's state, marked
// when it was redriven; "expired" when the ledger no longer holds it.
func stateNow(d sinkadmin.DeadLetter) string {
	s := d.State
	if s == "" {
		s = "expired"
	}
	if d.Redriven {
		s += " (redriven)"
	}
	return s
}

// DLQShowCmd is `onceflow dlq show`.
type DLQShowCmd struct {
	appFlags `embed:""`
	Sink     string `name:"sink" required:"" help:"The sink."`
	Key      string `name:"key" xor:"which" required:"" help:"The dead letter's idempotency key (its latest record)."`
	At       string `name:"at" xor:"which" required:"" placeholder:"PARTITION/OFFSET" help:"The dead letter at this partition and offset."`
}

// Run prints one dead letter.
func (c *DLQShowCmd) Run(env *Env) error {
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	dls, err := sinkadmin.DeadLetters(env.Ctx, c.BrokerList(), c.AppID, c.Sink, opts...)
	if err != nil {
		return err
	}
	var found *sinkadmin.DeadLetter
	for i := range dls {
		d := &dls[i]
		if c.Key != "" && d.Key == c.Key || c.At != "" && fmt.Sprintf("%d/%d", d.Partition, d.Offset) == c.At {
			found = d
		}
	}
	if found == nil {
		return fmt.Errorf("dlq: no dead letter of sink %s with key %q or at %q", c.Sink, c.Key, c.At)
	}
	if c.JSON {
		return json.NewEncoder(env.Stdout).Encode(found)
	}
	fmt.Fprintf(env.Stdout, "sink             %s\nat               %d/%d\nidempotency key  %s\nstate now        %s\nclass            %s\nattempts         %d\nerror            %s\nsource           %s\noutbox record    %s\ntime             %s\nrecord key       %s\npayload          %s\n",
		found.Sink, found.Partition, found.Offset, found.Key, stateNow(*found), found.Class, found.Attempts, found.Error, found.Source, found.Outbox,
		found.Time.UTC().Format("2006-01-02T15:04:05.000Z"), found.RecordKey, found.Payload)
	return nil
}

// jsonLines prints one JSON object per line.
// listing prints rows as JSON lines, or as a table under header followed
// by a line counting them ("<n> <what>").
func listing[T any](env *Env, asJSON bool, rows []T, header, what string, row func(T) string) error {
	if asJSON {
		return jsonLines(env.Stdout, rows)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, row(r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%d %s\n", len(rows), what)
	return nil
}

func jsonLines[T any](w io.Writer, items []T) error {
	enc := json.NewEncoder(w)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}
