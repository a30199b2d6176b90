package engine

// Topics: input topics checked, outputs, changelogs and link topics
// created before the replica joins its group.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/onceflow/onceflow/internal/kafka"
)

// prepare checks the input topics and creates the output topics.
func (e *Engine) prepare(ctx context.Context) error {
	admin := e.conn.admin
	sources := e.g.SourceTopics()
	links := e.g.LinkTopics()
	var external []string
	for _, t := range sources {
		if !slices.Contains(links, t) {
			external = append(external, t)
		}
	}
	have, err := admin.Partitions(external...)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	var errs []error
	for _, t := range external {
		if _, ok := have[t]; !ok {
			errs = append(errs, fmt.Errorf("input topic %q does not exist, or the cluster's ACLs hide it from this principal "+
				"(it needs READ on it, see docs/security.md) (%w)", t, kafka.ErrTopicMissing))
		}
	}
	if len(errs) == 0 {
		if err := e.prepareLinks(admin, links, have); err != nil {
			return err
		}
	}
	want := map[string]int32{}
	var maxParts int32
	copart := e.copartitioned(have)
	for _, st := range e.g.SubTopologies {
		var n int32
		for _, t := range st.SourceTopics {
			n = max(n, have[t])
		}
		maxParts = max(maxParts, n)
		for _, t := range st.SinkTopics {
			want[t] = max(want[t], n)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return errors.Join(fmt.Errorf("engine: %w", err), copart)
	}
	if copart != nil {
		return copart
	}
	if err := e.prepareOutboxes(admin, want); err != nil {
		return err
	}
	parts, err := admin.Ensure(want, nil)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	// Rejected records are kept until an operator has looked at them.
	rejected, err := admin.Ensure(map[string]int32{e.output.rejected: max(maxParts, 1)}, kafka.KeepForeverConfigs())
	if err != nil {
		return fmt.Errorf("engine: rejected topic: %w", err)
	}
	if err := e.keepForever(admin, "rejected", e.output.rejected); err != nil {
		return err
	}
	parts[e.output.rejected] = rejected[e.output.rejected]
	written := slices.Collect(maps.Keys(parts))
	e.restorer.changelogParts = map[string]int32{}
	if len(e.restorer.stores) > 0 {
		changelogs := map[string]int32{}
		for _, s := range e.restorer.stores {
			var n int32
			for _, t := range e.g.SubTopologies[s.sub].SourceTopics {
				n = max(n, have[t])
			}
			changelogs[s.topic] = n
		}
		compact := "compact"
		cl, err := admin.Ensure(changelogs, map[string]*string{"cleanup.policy": &compact})
		if err != nil {
			return fmt.Errorf("engine: changelogs: %w", err)
		}
		for t, n := range cl {
			if n, err = e.growChangelog(admin, t, n, changelogs[t]); err != nil {
				return err
			}
			e.restorer.changelogParts[t] = n
			written = append(written, t)
		}
		if err := e.restorer.readDeleteRetention(admin); err != nil {
			return err
		}
	}
	e.output.readLimits(admin, written, e.log)
	e.output.readStamps(admin, written, e.log)
	e.output.sinkParts = parts
	e.output.rejectedParts = parts[e.output.rejected]
	e.topics = sources
	e.log.Info("topics ready", "inputs", sources, "outputs", parts)
	return nil
}

// prepareLinks creates the repartition and through topics, each with the
// partition count of the sub-topology that writes it (known once that
// sub-topology's own sources are), and adds them to have. A through topic
// that exists is used as it is.
func (e *Engine) prepareLinks(admin *kafka.Admin, links []string, have map[string]int32) error {
	through := e.g.ThroughTopics()
	for progress := true; progress; {
		progress = false
		for _, t := range links {
			if _, ok := have[t]; ok {
				continue
			}
			var n int32
			known := true
			for _, src := range e.g.SubTopologies[e.g.WriterOf(t)].SourceTopics {
				p, ok := have[src]
				known = known && ok
				n = max(n, p)
			}
			if !known {
				continue
			}
			if slices.Contains(through, t) {
				got, err := admin.Ensure(map[string]int32{t: n}, nil)
				if err != nil {
					return fmt.Errorf("engine: through topic: %w", err)
				}
				have[t] = got[t]
				progress = true
				continue
			}
			got, err := admin.Ensure(map[string]int32{t: n}, repartitionConfigs())
			if err != nil {
				return fmt.Errorf("engine: repartition topic: %w", err)
			}
			if got[t] < n {
				e.log.Warn("the writer of a repartition topic has more partitions than the topic; adding partitions", "topic", t, "partitions", got[t], "writer", n)
				if err := admin.GrowPartitions(t, n); err != nil {
					return fmt.Errorf("engine: repartition topic %q has %d partitions, its writer %d: %w", t, got[t], n, err)
				}
				got[t] = n
			}
			if got[t] != n {
				return fmt.Errorf("engine: repartition topic %q has %d partitions, its writer %d: delete it to have it recreated", t, got[t], n)
			}
			if err := e.keepForever(admin, "repartition", t); err != nil {
				return err
			}
			have[t] = n
			progress = true
		}
	}
	return nil
}

// ErrResetUnfinished is returned by Run when a reset of the application
// began and did not finish (its marker topic exists): the internal topics
// may be gone while the input offsets still point where the old state
// left off, so processing would count from empty state. Not retryable
// until the reset is run again to its end.
var ErrResetUnfinished = errors.New("engine: a reset of the application did not finish")

// ErrNotCopartitioned is returned by Run when the source topics of one
// sub-topology (merged topics, a repartition topic beside a source) have
// different partition counts: partition p of some of them has no partner
// in the others, so its task cannot be formed, and the task assignor
// leaves it out. Found at start, or by a running replica's next session
// when one of the topics grew. Not retryable: give every topic of the
// sub-topology the same partition count, then start the replicas again.
var ErrNotCopartitioned = errors.New("engine: input topics of one sub-topology are not co-partitioned")

// copartitioned checks that the source topics of every sub-topology have
// one partition count, as have gives them (topics it lacks are skipped).
func (e *Engine) copartitioned(have map[string]int32) error {
	var errs []string
	for _, st := range e.g.SubTopologies {
		var n int32
		for _, t := range st.SourceTopics {
			p, ok := have[t]
			if !ok {
				continue
			}
			if n != 0 && p != n {
				errs = append(errs, fmt.Sprintf("sub-topology %d reads %s", st.ID, describeParts(st.SourceTopics, have)))
				break
			}
			n = p
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s (the partitions only some of them have are not processed)", ErrNotCopartitioned, strings.Join(errs, "; "))
}

// checkCopartitioned checks, at the start of a session, that no source
// topic grew alone since the replica started: the added partitions would
// be left unprocessed, silently. A metadata failure is logged and lets
// the session go on.
func (e *Engine) checkCopartitioned() error {
	have, err := e.conn.admin.Partitions(e.g.SourceTopics()...)
	if err != nil {
		e.log.Warn("cannot read the input topics' partition counts to check them", "error", err)
		return nil
	}
	return e.copartitioned(have)
}

func describeParts(topics []string, have map[string]int32) string {
	var parts []string
	for _, t := range topics {
		parts = append(parts, fmt.Sprintf("%s has %d partitions", t, have[t]))
	}
	return strings.Join(parts, ", ")
}
