package topics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrInUse is wrapped by Delete's error for an internal topic of an
// application whose group has members. Retryable once it stops (or
// delete with force).
var ErrInUse = errors.New("topics: internal topic of a running application")

// Delete deletes the topics and waits (at most 30 s) until metadata no
// longer lists them. Kafka's own topics are always refused; an onceflow
// application's internal topic (repartition, changelog, rejected, outbox,
// dead-letter, ledger) is refused while a group named by its prefix has
// members, and an outbox while it holds records its sink runner has not
// settled, unless force. Nothing is deleted unless every topic may be.
func (a *Admin) Delete(ctx context.Context, names []string, force bool) error {
	all, err := a.adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return fmt.Errorf("topics: delete: %w", err)
	}
	var errs []error
	for _, n := range names {
		td, ok := all[n]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			errs = append(errs, fmt.Errorf("%w: %q", ErrNotFound, n))
			continue
		}
		switch kind := internalKind(td, all); kind {
		case "":
		case "kafka":
			errs = append(errs, fmt.Errorf("topics: delete %q: the broker's own topic", n))
		default:
			if force {
				continue
			}
			group, members, err := a.runningOwner(ctx, n)
			if err != nil {
				return err
			}
			if group != "" {
				errs = append(errs, fmt.Errorf("%w: %q is a %s topic of application %q, whose group has %d members; stop it first, or --force",
					ErrInUse, n, kind, group, members))
				continue
			}
			if kind == "outbox" {
				pending, group, err := a.undelivered(ctx, n)
				if err != nil {
					return err
				}
				if pending > 0 {
					errs = append(errs, fmt.Errorf("%w: outbox %q holds %d records its sink runner (group %q) has not settled: deliveries not made yet exist nowhere else; run the application until they are, or --force",
						ErrInUse, n, pending, group))
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	resp, err := a.adm.DeleteTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("topics: delete: %w", err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			return fmt.Errorf("topics: delete %q: %w", r.Topic, r.Err)
		}
	}
	return a.awaitGone(ctx, names, visibleBound)
}

// undelivered returns how many records of outbox (named
// "<app>-sink-<name>") are at or past its sink runner's committed offsets
// (group "<app>-sinks"), below the last stable offset: deliveries not
// settled yet.
func (a *Admin) undelivered(ctx context.Context, outbox string) (int64, string, error) {
	i := strings.LastIndex(outbox, "-sink-")
	if i < 0 {
		return 0, "", nil
	}
	group := outbox[:i] + "-sinks"
	committed, err := a.adm.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return 0, group, fmt.Errorf("topics: committed offsets of %q: %w", group, err)
	}
	starts, err := a.adm.ListStartOffsets(ctx, outbox)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, group, fmt.Errorf("topics: start offsets of %q: %w", outbox, err)
	}
	stable, err := a.adm.ListCommittedOffsets(ctx, outbox)
	if err == nil {
		err = stable.Error()
	}
	if err != nil {
		return 0, group, fmt.Errorf("topics: last stable offsets of %q: %w", outbox, err)
	}
	var pending int64
	stable.Each(func(o kadm.ListedOffset) {
		from := int64(0)
		if s, ok := starts.Lookup(outbox, o.Partition); ok {
			from = s.Offset
		}
		if c, ok := committed.Lookup(outbox, o.Partition); ok && c.Err == nil && c.At > from {
			from = c.At
		}
		pending += max(0, o.Offset-from)
	})
	return pending, group, nil
}

// runningOwner returns the group with members (and how many) whose name
// followed by "-" begins topic: the running application it belongs to
// (or its sink runner's group, "<app>-sinks"); "" when none.
func (a *Admin) runningOwner(ctx context.Context, topic string) (string, int, error) {
	listed, err := a.adm.ListGroups(ctx)
	if err != nil {
		return "", 0, fmt.Errorf("topics: list groups: %w", err)
	}
	var candidates []string
	for _, g := range listed.Groups() {
		if strings.HasPrefix(topic, g+"-") {
			candidates = append(candidates, g)
		}
	}
	if len(candidates) == 0 {
		return "", 0, nil
	}
	dgs, err := a.adm.DescribeGroups(ctx, candidates...)
	if err != nil {
		return "", 0, fmt.Errorf("topics: describe groups: %w", err)
	}
	slices.Sort(candidates)
	for _, g := range candidates {
		if n := len(dgs[g].Members); n > 0 {
			return g, n, nil
		}
	}
	return "", 0, nil
}

// awaitGone waits, at most bound, until metadata lists none of names.
func (a *Admin) awaitGone(ctx context.Context, names []string, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		// Every topic, not the named ones: a request naming a topic that
		// is gone is retried by the client until its own timeout.
		all, err := a.adm.ListTopics(ctx)
		if err == nil && !slices.ContainsFunc(names, all.Has) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topics: deleted topics still listed after %s", bound)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
