// Package groups describes a consumer group for `onceflow groups
// describe`, as kafka-consumer-groups --describe does: per partition its
// committed offset, last stable offset, end offset, lag and the member
// and instance that owns it; per member its instance, client, host,
// tasks (decoded from the task assignor's assignment) and partitions.
package groups

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
)

// ErrNoGroup is wrapped by Describe's error for a group that has neither
// members nor committed offsets. It is not retryable.
var ErrNoGroup = errors.New("groups: no such group")

// Partition is one partition the group reads or has committed.
type Partition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is the group's committed offset; -1: none.
	Committed int64 `json:"committed"`
	// Stable is the last stable offset, End the high watermark.
	Stable int64 `json:"stable"`
	End    int64 `json:"end"`
	// Lag is Stable minus Committed (the log start when nothing is
	// committed), in offsets: transaction markers and aborted records
	// count (`onceflow lag` counts records).
	Lag int64 `json:"lag"`
	// Member and Instance own the partition now; empty: no member does.
	Member   string `json:"member,omitempty"`
	Instance string `json:"instance,omitempty"`
}

// Member is one member of the group.
type Member struct {
	Member   string `json:"member"`
	Instance string `json:"instance,omitempty"`
	Client   string `json:"client"`
	Host     string `json:"host"`
	// Tasks are its tasks ("<sub-topology>_<partition>"), when the task
	// assignor assigned them.
	Tasks      []string `json:"tasks,omitempty"`
	Partitions []string `json:"partitions"` // topic/partition
}

// Description is a group's state.
type Description struct {
	Group      string      `json:"group"`
	State      string      `json:"state"`
	Protocol   string      `json:"protocol,omitempty"`
	Members    []Member    `json:"members"`
	Partitions []Partition `json:"partitions"`
}

// Describe reads the group's members, their assignments and its committed
// offsets, and each partition's last stable and end offsets. extra are
// client options appended to the defaults (TLS, SASL).
func Describe(ctx context.Context, brokers []string, group string, extra ...kgo.Opt) (Description, error) {
	cl, err := kgo.NewClient(append(clientcfg.Options(brokers, "onceflow-groups", nil), extra...)...)
	if err != nil {
		return Description{}, fmt.Errorf("groups: client: %w", err)
	}
	defer cl.Close()
	if err := clientcfg.Probe(ctx, cl, brokers); err != nil {
		return Description{}, fmt.Errorf("groups: %w", err)
	}
	adm := kadm.NewClient(cl)
	dgs, err := adm.DescribeGroups(ctx, group)
	if err == nil {
		err = dgs.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return Description{}, fmt.Errorf("%w: %q", ErrNoGroup, group)
	}
	if err != nil {
		return Description{}, fmt.Errorf("groups: describe %q: %w", group, err)
	}
	dg := dgs[group]
	d := Description{Group: group, State: dg.State, Protocol: dg.Protocol}
	type tp struct {
		topic string
		p     int32
	}
	owner := map[tp]Member{}
	for _, m := range dg.Members {
		mem := Member{Member: m.MemberID, Client: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			mem.Instance = *m.InstanceID
		}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				for _, p := range t.Partitions {
					mem.Partitions = append(mem.Partitions, fmt.Sprintf("%s/%d", t.Topic, p))
					owner[tp{t.Topic, p}] = mem
				}
			}
			if tasks, err := kafka.AssignedTasks(c.UserData); err == nil {
				for _, t := range tasks {
					mem.Tasks = append(mem.Tasks, t.String())
				}
			}
		}
		slices.Sort(mem.Partitions)
		d.Members = append(d.Members, mem)
	}
	offsets, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = offsets.Error()
	}
	if err != nil {
		return Description{}, fmt.Errorf("groups: committed offsets of %q: %w", group, err)
	}
	if len(d.Members) == 0 && len(offsets) == 0 {
		return Description{}, fmt.Errorf("%w: %q has no members and no committed offsets", ErrNoGroup, group)
	}
	committed := map[tp]int64{}
	offsets.Each(func(o kadm.OffsetResponse) { committed[tp{o.Topic, o.Partition}] = o.At })
	topics := map[string]bool{}
	for k := range committed {
		topics[k.topic] = true
	}
	for k := range owner {
		topics[k.topic] = true
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for t := range topics {
			if !yield(t) {
				return
			}
		}
	})
	list := func(what string, fn func(context.Context, ...string) (kadm.ListedOffsets, error)) (map[tp]int64, error) {
		lo, err := fn(ctx, names...)
		if err != nil {
			return nil, fmt.Errorf("groups: list %s offsets: %w", what, err)
		}
		m := map[tp]int64{}
		lo.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				m[tp{o.Topic, o.Partition}] = o.Offset
			}
		})
		return m, nil
	}
	starts, err := list("start", adm.ListStartOffsets)
	if err != nil {
		return Description{}, err
	}
	stable, err := list("last stable", adm.ListCommittedOffsets)
	if err != nil {
		return Description{}, err
	}
	ends, err := list("end", adm.ListEndOffsets)
	if err != nil {
		return Description{}, err
	}
	for k, end := range ends {
		if !topics[k.topic] {
			continue
		}
		p := Partition{Topic: k.topic, Partition: k.p, Committed: -1, Stable: stable[k], End: end}
		from := starts[k]
		if c, ok := committed[k]; ok && c >= 0 {
			p.Committed, from = c, max(c, from)
		}
		p.Lag = max(0, p.Stable-from)
		if m, ok := owner[k]; ok {
			p.Member, p.Instance = m.Member, m.Instance
		}
		d.Partitions = append(d.Partitions, p)
	}
	slices.SortFunc(d.Partitions, func(a, b Partition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return d, nil
}

// WriteText writes d as two tables: partitions, then members.
func (d Description) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "group %s: %s", d.Group, d.State)
	if d.Protocol != "" {
		fmt.Fprintf(w, " (%s)", d.Protocol)
	}
	fmt.Fprintf(w, ", %d members\n\n", len(d.Members))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tSTABLE\tEND\tLAG\tINSTANCE\tMEMBER")
	for _, p := range d.Partitions {
		c := "-"
		if p.Committed >= 0 {
			c = fmt.Sprint(p.Committed)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\n", p.Topic, p.Partition, c, p.Stable, p.End, p.Lag, dash(p.Instance), dash(p.Member))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Members) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tMEMBER\tCLIENT\tHOST\tTASKS\tPARTITIONS")
	for _, m := range d.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", dash(m.Instance), m.Member, m.Client, m.Host,
			dash(strings.Join(m.Tasks, ",")), dash(strings.Join(m.Partitions, ",")))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
