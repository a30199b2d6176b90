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

// Progress is how far a consumer group has committed through a topic.
type Progress struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Committed int64  `json:"committed"` // records below the committed offsets
	End       int64  `json:"end"`       // records below the end offsets
	Lag       int64  `json:"lag"`
}

// GroupProgress reads the group's committed offsets and the topic's end
// offsets (offsets count records from 0 on each partition; control records
// of transactions written to the topic count too, so this is exact for
// topics written without transactions, such as generated input).
//
// extra are client options appended to the defaults (TLS, SASL:
// clientcfg.Security.Options).
func GroupProgress(ctx context.Context, brokers []string, group, topic string, extra ...kgo.Opt) (Progress, error) {
	cl, err := newClient(ctx, brokers, extra)
	if err != nil {
		return Progress{}, err
	}
	defer cl.Close()
	return groupProgress(ctx, kadm.NewClient(cl), group, topic)
}

func groupProgress(ctx context.Context, adm *kadm.Client, group, topic string) (Progress, error) {
	p := Progress{Group: group, Topic: topic}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return p, fmt.Errorf("verify: end offsets of %q: %w", topic, err)
	}
	if err := ends.Error(); err != nil {
		return p, fmt.Errorf("verify: end offsets of %q: %w", topic, err)
	}
	ends.Each(func(o kadm.ListedOffset) { p.End += o.Offset })
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return p, fmt.Errorf("verify: committed offsets of group %q: %w", group, err)
	}
	for _, o := range resp[topic] {
		if o.Err == nil && o.At > 0 {
			p.Committed += o.At
		}
	}
	p.Lag = p.End - p.Committed
	return p, nil
}

// WaitCaughtUp polls until the group has committed through the topic's
// current end, calling report on every poll. An error the cluster clears
// by itself (a coordinator not available yet: a fresh cluster creating its
// offsets topic, a group just created) is polled past until ctx ends; any
// other error is returned at once. extra are client options, as for
// GroupProgress.
func WaitCaughtUp(ctx context.Context, brokers []string, group, topic string, every time.Duration, report func(Progress), extra ...kgo.Opt) (Progress, error) {
	cl, err := newClient(ctx, brokers, extra)
	if err != nil {
		return Progress{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		p, err := groupProgress(ctx, adm, group, topic)
		switch {
		case err != nil && !kerr.IsRetriable(err):
			return p, err
		case err == nil && report != nil:
			report(p)
		}
		if err == nil && p.End > 0 && p.Lag <= 0 {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(every):
		}
	}
}
