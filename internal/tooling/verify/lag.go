package verify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Progress is how far a consumer group has read a topic.
type Progress struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Committed int64  `json:"committed"` // the sum of the committed offsets (a partition without one: its log start)
	Stable    int64  `json:"stable"`    // the sum of the last stable offsets: below them every transaction has ended
	End       int64  `json:"end"`       // the sum of the end offsets (high watermarks)
	// Lag is the number of records the group has yet to read below the
	// last stable offsets, as a read_committed consumer is given them:
	// transaction markers and aborted records are not counted.
	Lag int64 `json:"lag"`
	// Estimated is set when a partition was too far behind to count
	// record by record: its lag is its offsets, markers included, an upper
	// bound.
	Estimated bool `json:"estimated,omitempty"`
	// NoGroup is set when the group does not exist: it has neither
	// members nor committed offsets (on any topic).
	NoGroup bool `json:"no_group,omitempty"`
}

// ErrNoGroup is wrapped by a caller's error for a Progress whose group
// does not exist. Not retryable until the group starts.
var ErrNoGroup = errors.New("verify: no such group")

// countBudget bounds the offsets GroupProgress reads to count the lag
// exactly; waitBudget bounds those of each poll of WaitCaughtUp, whose lag
// only has to be exact near zero.
const (
	countBudget = 100_000
	waitBudget  = 20_000
)

// GroupProgress reads the group's committed offsets and counts the records
// of the topic it has not read yet, up to each partition's last stable
// offset (see Progress.Lag: on a topic written in transactions, the
// markers after the committed offset are not lag).
//
// extra are client options appended to the defaults (TLS, SASL:
// clientcfg.Security.Options).
func GroupProgress(ctx context.Context, brokers []string, group, topic string, extra ...kgo.Opt) (Progress, error) {
	cl, err := newClient(ctx, brokers, extra)
	if err != nil {
		return Progress{}, err
	}
	defer cl.Close()
	return groupProgress(ctx, cl, group, topic, countBudget)
}

func groupProgress(ctx context.Context, cl *kgo.Client, group, topic string, budget int64) (Progress, error) {
	p := Progress{Group: group, Topic: topic}
	adm := kadm.NewClient(cl)
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return p, fmt.Errorf("verify: metadata for %q: %w", topic, err)
	}
	td, ok := tds[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return p, topicNotFoundError{topic}
	}
	if td.Err != nil {
		return p, fmt.Errorf("verify: metadata for %q: %w", topic, td.Err)
	}
	list := func(what string, fn func(context.Context, ...string) (kadm.ListedOffsets, error)) (map[int32]int64, error) {
		lo, err := fn(ctx, topic)
		if err == nil {
			err = lo.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("verify: %s offsets of %q: %w", what, topic, err)
		}
		m := map[int32]int64{}
		lo.Each(func(o kadm.ListedOffset) { m[o.Partition] = o.Offset })
		return m, nil
	}
	starts, err := list("start", adm.ListStartOffsets)
	if err != nil {
		return p, err
	}
	stable, err := list("last stable", adm.ListCommittedOffsets)
	if err != nil {
		return p, err
	}
	ends, err := list("end", adm.ListEndOffsets)
	if err != nil {
		return p, err
	}
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return p, fmt.Errorf("verify: committed offsets of group %q: %w", group, err)
	}
	if len(resp) == 0 {
		dgs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return p, fmt.Errorf("verify: describe group %q: %w", group, err)
		}
		p.NoGroup = len(dgs[group].Members) == 0
	}
	var spans []span
	for _, part := range td.Partitions.Sorted() {
		id := part.Partition
		from := starts[id]
		if o, ok := resp.Lookup(topic, id); ok && o.Err == nil && o.At >= 0 {
			from = max(from, o.At)
		}
		p.Committed += from
		p.Stable += stable[id]
		p.End += ends[id]
		if from < stable[id] {
			spans = append(spans, span{partition: id, leader: part.Leader, from: from, to: stable[id]})
		}
	}
	counts, exact, err := unread(ctx, cl, topic, td.ID, spans, budget)
	if err != nil {
		return p, err
	}
	for _, n := range counts {
		p.Lag += n
	}
	p.Estimated = !exact
	return p, nil
}

// WaitCaughtUp polls until the group has read every record of the topic
// below its last stable offsets (a lag of 0, see GroupProgress), calling
// report on every poll. An error the cluster clears
// by itself (a coordinator not available yet: a fresh cluster creating its
// offsets topic, a group just created) is polled past until ctx ends; any
// other error is returned at once. When ctx ends, even with a request out,
// the last reading is returned with ctx's error. extra are client options,
// as for GroupProgress.
func WaitCaughtUp(ctx context.Context, brokers []string, group, topic string, every time.Duration, report func(Progress), extra ...kgo.Opt) (Progress, error) {
	cl, err := newClient(ctx, brokers, extra)
	if err != nil {
		return Progress{}, err
	}
	defer cl.Close()
	var last Progress
	read := false
	for {
		p, err := groupProgress(ctx, cl, group, topic, waitBudget)
		if err != nil && ctx.Err() != nil {
			// The wait ended while a request was out: the last reading
			// stands, and without one the wait says what it could not read.
			if read {
				return last, ctx.Err()
			}
			return p, fmt.Errorf("verify: no reading of group %q on %q within the wait: %v", group, topic, err)
		}
		switch {
		case err != nil && !kerr.IsRetriable(err) && !errors.Is(err, ErrTopicNotFound):
			return p, err
		case err == nil && report != nil:
			report(p)
		}
		if err == nil {
			last, read = p, true
		}
		if err == nil && p.End > 0 && p.Lag <= 0 && !p.NoGroup {
			return p, nil
		}
		select {
		case <-ctx.Done():
			if read {
				return last, ctx.Err()
			}
			return p, fmt.Errorf("verify: no reading of group %q on %q within the wait: %v", group, topic, err)
		case <-time.After(every):
		}
	}
}
