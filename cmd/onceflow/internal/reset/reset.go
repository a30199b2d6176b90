// Package reset resets an onceflow application for `onceflow reset`, as
// kafka-streams-application-reset does for Kafka Streams: the group's
// input offsets move to earliest, latest or a time; the application's
// repartition and changelog topics are deleted (with the group's offsets
// on them); and the local state dir is wiped. It refuses while the
// application's groups have members or its state dir is held by a running
// process, and every step can run again: a reset cut short is finished by
// running the same command once more. While a reset is unfinished its
// marker topic exists, and no replica of the application starts.
package reset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/statedir"
	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
)

// ErrActive is wrapped by Run's error when one of the application's
// groups has members (a replica or a sink runner is running, or stopped
// less than a session timeout ago without leaving). Retryable once they
// are gone.
var ErrActive = errors.New("reset: the application is running")

// Config is one reset.
type Config struct {
	Brokers []string
	// Extra are client options appended to the defaults (TLS, SASL).
	Extra []kgo.Opt
	// AppID is the application id: its consumer group and the prefix of
	// its internal topics.
	AppID string
	// Inputs are the input topics whose offsets move. Empty: every topic
	// the group has committed offsets on that is not one of the
	// application's own.
	Inputs []string
	// To is where the inputs start again: "earliest" (the log start),
	// "latest" (the last stable offset: every committed record skipped),
	// or an RFC 3339 time (the first record at or after it).
	To string
	// StateDir is the local state dir to wipe; "" wipes none.
	StateDir string
	// DryRun prints the plan and changes nothing.
	DryRun bool
	// DeleteTimeout bounds the wait for deleted topics to leave the
	// metadata. Default 30 s.
	DeleteTimeout time.Duration
}

// Move is one input partition's offset change.
type Move struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"` // committed now; -1: none
	To        int64  `json:"to"`
}

// Kept is an application topic the reset leaves alone, and why.
type Kept struct {
	Topic string `json:"topic"`
	Why   string `json:"why"`
}

// Plan is what a reset does (or, in a dry run, would do).
type Plan struct {
	App    string   `json:"app"`
	Moves  []Move   `json:"offsets"`
	Delete []string `json:"delete_topics"`
	// DropOffsets are the topics (internal ones) whose committed offsets
	// the group loses, so that a recreated topic is read from its start.
	DropOffsets []string `json:"drop_offsets"`
	Keep        []Kept   `json:"keep_topics"`
	// StateDir is the dir wiped ("" none); StateEntries what it holds.
	StateDir     string `json:"state_dir,omitempty"`
	StateEntries int    `json:"state_entries"`
}

// Validate checks the config.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("reset: no brokers given"))
	}
	if c.AppID == "" {
		errs = append(errs, errors.New("reset: no application id given"))
	}
	if _, err := c.target(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// target parses To: 0 earliest, -1 latest, else a time in milliseconds.
func (c Config) target() (int64, error) {
	switch c.To {
	case "earliest":
		return 0, nil
	case "latest":
		return -1, nil
	}
	t, err := time.Parse(time.RFC3339Nano, c.To)
	if err != nil {
		return 0, fmt.Errorf("reset: to %q: want earliest, latest or an RFC 3339 time", c.To)
	}
	return t.UnixMilli(), nil
}

// Run plans the reset, prints the plan on w, and unless DryRun carries
// it out in an order any step of which may be cut short and run again:
// (0) the marker topic created, (1) the state dir wiped, (2) the group's offsets on internal topics
// dropped, (3) the internal topics deleted (and their absence awaited),
// (4) the input offsets committed, (5) the marker deleted.
func Run(ctx context.Context, cfg Config, w io.Writer) (Plan, error) {
	plan := Plan{App: cfg.AppID, StateDir: cfg.StateDir}
	if err := cfg.Validate(); err != nil {
		return plan, err
	}
	// A short metadata age: the client answers metadata requests from a
	// cache (5 s by default), which would list deleted topics for as long.
	opts := append(clientcfg.Options(cfg.Brokers, "onceflow-reset", nil), kgo.MetadataMinAge(50*time.Millisecond))
	cl, err := kgo.NewClient(append(opts, cfg.Extra...)...)
	if err != nil {
		return plan, fmt.Errorf("reset: client: %w", err)
	}
	defer cl.Close()
	if err := clientcfg.Probe(ctx, cl, cfg.Brokers); err != nil {
		return plan, fmt.Errorf("reset: %w", err)
	}
	adm := kadm.NewClient(cl)
	if err := refuseActive(ctx, adm, cfg.AppID, cfg.AppID+"-sinks"); err != nil {
		return plan, err
	}
	var lock *statedir.Lock
	if cfg.StateDir != "" {
		if entries, err := os.ReadDir(cfg.StateDir); err == nil {
			// A process holding the dir is a replica still running here
			// (a zombie the group may no longer list): refuse.
			if lock, err = statedir.Acquire(cfg.StateDir); err != nil {
				return plan, fmt.Errorf("reset: %w", err)
			}
			defer lock.Release()
			for _, e := range entries {
				if e.Name() != statedir.LockFile {
					plan.StateEntries++
				}
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return plan, fmt.Errorf("reset: state dir: %w", err)
		}
	}
	if err := planTopics(ctx, adm, cfg, &plan); err != nil {
		return plan, err
	}
	plan.WriteText(w, cfg.DryRun)
	if cfg.DryRun {
		return plan, nil
	}
	// The marker first: from here until the input offsets are committed,
	// a replica starting would process from offsets that do not match its
	// emptied state, so it refuses while the marker exists.
	marker := graph.ResetMarkerTopic(cfg.AppID)
	if err := createMarker(ctx, adm, marker); err != nil {
		return plan, err
	}
	if lock != nil {
		if err := wipe(cfg.StateDir); err != nil {
			return plan, err
		}
	}
	if err := dropOffsets(ctx, adm, cfg.AppID, plan.DropOffsets); err != nil {
		return plan, err
	}
	if err := deleteTopics(ctx, adm, plan.Delete, cfg.DeleteTimeout); err != nil {
		return plan, err
	}
	if len(plan.Moves) > 0 {
		offsets := kadm.Offsets{}
		for _, m := range plan.Moves {
			offsets.Add(kadm.Offset{Topic: m.Topic, Partition: m.Partition, At: m.To, LeaderEpoch: -1})
		}
		resp, err := adm.CommitOffsets(ctx, cfg.AppID, offsets)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.RebalanceInProgress) {
				return plan, fmt.Errorf("%w: a member joined group %q during the reset; stop it and run the reset again: %v", ErrActive, cfg.AppID, err)
			}
			return plan, fmt.Errorf("reset: commit input offsets: %w", err)
		}
	}
	if err := deleteTopics(ctx, adm, []string{marker}, cfg.DeleteTimeout); err != nil {
		return plan, fmt.Errorf("reset: remove the marker %s (run the reset again): %w", marker, err)
	}
	fmt.Fprintf(w, "reset of %s complete\n", cfg.AppID)
	return plan, nil
}

// createMarker creates the topic that marks a reset in progress; one left
// by a reset cut short is kept.
func createMarker(ctx context.Context, adm *kadm.Client, marker string) error {
	resp, err := adm.CreateTopic(ctx, 1, -1, nil, marker)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("reset: create the marker %s: %w", marker, err)
	}
	return nil
}

// refuseActive fails when any of groups has members.
func refuseActive(ctx context.Context, adm *kadm.Client, groups ...string) error {
	dgs, err := adm.DescribeGroups(ctx, groups...)
	if err != nil {
		return fmt.Errorf("reset: describe groups: %w", err)
	}
	for _, g := range groups {
		dg, ok := dgs[g]
		if !ok || errors.Is(dg.Err, kerr.GroupIDNotFound) {
			continue
		}
		if dg.Err != nil {
			return fmt.Errorf("reset: describe group %q: %w", g, dg.Err)
		}
		if len(dg.Members) == 0 && (dg.State == "Empty" || dg.State == "Dead" || dg.State == "") {
			continue
		}
		var who []string
		for _, m := range dg.Members {
			id := m.MemberID
			if m.InstanceID != nil {
				id = *m.InstanceID
			}
			who = append(who, id+"@"+m.ClientHost)
		}
		return fmt.Errorf("%w: group %q is %s with %d members (%s); stop every replica first (a replica that stopped without leaving stays a member until its session times out)",
			ErrActive, g, dg.State, len(dg.Members), strings.Join(who, ", "))
	}
	return nil
}

// Deleted reports whether a topic of application app is one a reset
// deletes: its repartition topics and its stores' changelogs (not the
// sink runners' ledger changelogs). Both hold only what the application
// derives again from its inputs.
func Deleted(app, topic string) bool {
	if !strings.HasPrefix(topic, app+"-") {
		return false
	}
	return strings.HasSuffix(topic, "-repartition") ||
		(strings.HasSuffix(topic, "-changelog") && !strings.HasSuffix(topic, "-ledger-changelog"))
}

// otherApps are the groups among groups of other applications whose ids
// begin with app's and a dash ("pay-v2" beside "pay"): their topics share
// app's prefix but are not app's. The sink runner's "<app>-sinks" is app's.
func otherApps(app string, groups []string) []string {
	var others []string
	for _, g := range groups {
		if g != app+"-sinks" && strings.HasPrefix(g, app+"-") {
			others = append(others, g)
		}
	}
	return others
}

// ownerAmong returns the application among apps that topic is an
// onceflow topic of (the longest id when several are), or "".
func ownerAmong(apps []string, topic string) string {
	owner := ""
	for _, a := range apps {
		rest, ok := strings.CutPrefix(topic, a+"-")
		if !ok || len(a) <= len(owner) {
			continue
		}
		name, _ := strings.CutSuffix(rest, "-repartition")
		name, _ = strings.CutSuffix(name, "-changelog")
		if name != "" && (Deleted(a, topic) || keptWhy(a, topic) != "") {
			owner = a
		}
	}
	return owner
}

// keptWhy says why a topic of app is kept, or "" for a topic that is not
// the application's.
func keptWhy(app, topic string) string {
	rest, ok := strings.CutPrefix(topic, app+"-")
	switch {
	case !ok:
		return ""
	case rest == "rejected":
		return "rejected records exist nowhere else"
	case strings.HasPrefix(rest, "sink-") && strings.HasSuffix(rest, "-dlq"):
		return "dead letters exist nowhere else"
	case strings.HasPrefix(rest, "sink-") && strings.HasSuffix(rest, "-ledger-changelog"):
		return "the delivery ledger: effects already delivered are not sent again"
	case strings.HasPrefix(rest, "sink-"):
		return "outbox: deliveries not yet made exist nowhere else"
	}
	return ""
}

// planTopics fills the plan's moves, deletions and kept topics.
func planTopics(ctx context.Context, adm *kadm.Client, cfg Config, plan *Plan) error {
	tds, err := adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("reset: list topics: %w", err)
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("reset: list groups: %w", err)
	}
	others := otherApps(cfg.AppID, groups.Groups())
	for _, name := range slices.Sorted(maps.Keys(tds)) {
		if other := ownerAmong(others, name); other != "" {
			plan.Keep = append(plan.Keep, Kept{Topic: name, Why: "application " + other + "'s"})
		} else if Deleted(cfg.AppID, name) {
			plan.Delete = append(plan.Delete, name)
		} else if why := keptWhy(cfg.AppID, name); why != "" {
			plan.Keep = append(plan.Keep, Kept{Topic: name, Why: why})
		}
	}
	committed, err := adm.FetchOffsets(ctx, cfg.AppID)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return fmt.Errorf("reset: fetch offsets of %q: %w", cfg.AppID, err)
	}
	inputs := cfg.Inputs
	for _, t := range slices.Sorted(maps.Keys(committed)) {
		switch {
		case ownerAmong(others, t) != "":
		case Deleted(cfg.AppID, t):
			plan.DropOffsets = append(plan.DropOffsets, t)
		case len(cfg.Inputs) == 0 && keptWhy(cfg.AppID, t) == "":
			inputs = append(inputs, t)
		}
	}
	if len(inputs) == 0 {
		return nil
	}
	for _, t := range inputs {
		if td, ok := tds[t]; !ok || td.Err != nil {
			return fmt.Errorf("reset: input topic %q does not exist", t)
		}
	}
	at, _ := cfg.target()
	var listed kadm.ListedOffsets
	switch at {
	case 0:
		listed, err = adm.ListStartOffsets(ctx, inputs...)
	case -1:
		listed, err = adm.ListCommittedOffsets(ctx, inputs...)
	default:
		listed, err = adm.ListOffsetsAfterMilli(ctx, at, inputs...)
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return fmt.Errorf("reset: list offsets of %s: %w", strings.Join(inputs, ", "), err)
	}
	listed.Each(func(o kadm.ListedOffset) {
		from := int64(-1)
		if c, ok := committed.Lookup(o.Topic, o.Partition); ok && c.Err == nil {
			from = c.At
		}
		plan.Moves = append(plan.Moves, Move{Topic: o.Topic, Partition: o.Partition, From: from, To: o.Offset})
	})
	slices.SortFunc(plan.Moves, func(a, b Move) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return nil
}

// wipe empties dir, leaving the lock file the caller holds.
func wipe(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reset: wipe state dir: %w", err)
	}
	for _, e := range entries {
		if e.Name() == statedir.LockFile {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("reset: wipe state dir: %w", err)
		}
	}
	return nil
}

// dropOffsets deletes the group's committed offsets on topics: a
// repartition topic created again must be read from its start, not from
// an offset of the topic that was deleted (an out-of-range offset on an
// internal topic stops a replica). A topic already gone is fine.
func dropOffsets(ctx context.Context, adm *kadm.Client, group string, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("reset: fetch offsets of %q: %w", group, err)
	}
	set := kadm.TopicsSet{}
	for _, t := range topics {
		for p := range committed[t] {
			set.Add(t, p)
		}
	}
	resp, err := adm.DeleteOffsets(ctx, group, set)
	if err != nil {
		return fmt.Errorf("reset: delete offsets of %q: %w", group, err)
	}
	var errs []error
	resp.EachError(func(t string, p int32, err error) {
		if !errors.Is(err, kerr.UnknownTopicOrPartition) {
			errs = append(errs, fmt.Errorf("%s/%d: %w", t, p, err))
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("reset: delete offsets of %q: %w", group, errors.Join(errs...))
	}
	return nil
}

// deleteTopics deletes topics and waits until metadata no longer lists
// them, so that a replica started right after the reset creates them
// anew instead of finding a topic being deleted.
func deleteTopics(ctx context.Context, adm *kadm.Client, topics []string, bound time.Duration) error {
	if len(topics) == 0 {
		return nil
	}
	resp, err := adm.DeleteTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("reset: delete topics: %w", err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("reset: delete topic %q: %w", r.Topic, r.Err)
		}
	}
	return AwaitGone(ctx, adm, topics, bound)
}

// AwaitGone waits, at most bound (0: 30 s), until metadata lists none of
// topics.
func AwaitGone(ctx context.Context, adm *kadm.Client, topics []string, bound time.Duration) error {
	if bound <= 0 {
		bound = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		// All topics, not the named ones: a request naming a topic that
		// is gone is retried by the client until its own timeout.
		tds, err := adm.ListTopics(ctx)
		if err == nil {
			left := 0
			for _, t := range topics {
				if td, ok := tds[t]; ok && td.Err == nil {
					left++
				}
			}
			if left == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reset: deleted topics still listed after %s: %w", bound, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WriteText prints the plan: what moves, what goes, what stays and why.
func (p Plan) WriteText(w io.Writer, dry bool) {
	verb := "resetting"
	if dry {
		verb = "dry run: would reset"
	}
	fmt.Fprintf(w, "%s application %s\n", verb, p.App)
	if len(p.Moves) == 0 {
		fmt.Fprintln(w, "input offsets: none committed (name --input topics to set them)")
	}
	for _, m := range p.Moves {
		from := "none"
		if m.From >= 0 {
			from = fmt.Sprint(m.From)
		}
		fmt.Fprintf(w, "input offset %s/%d: %s -> %d\n", m.Topic, m.Partition, from, m.To)
	}
	for _, t := range p.DropOffsets {
		fmt.Fprintf(w, "drop committed offsets on %s\n", t)
	}
	for _, t := range p.Delete {
		fmt.Fprintf(w, "delete topic %s\n", t)
	}
	for _, k := range p.Keep {
		fmt.Fprintf(w, "keep topic %s (%s)\n", k.Topic, k.Why)
	}
	switch {
	case p.StateDir == "":
		fmt.Fprintln(w, "local state: not wiped (no --state-dir given; wipe every replica's state dir before it starts again)")
	default:
		fmt.Fprintf(w, "wipe state dir %s (%d entries)\n", p.StateDir, p.StateEntries)
	}
}
