package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// Positions returns where group's next read of each partition given
// starts: its committed offset, or the partition's log start when none is
// committed (the group reads such a partition from its oldest record). The
// fetch requires stable offsets: while a transaction holding an offset of
// one of the partitions is open, it asks again until ctx ends.
//
// Committing these positions again changes nothing the group reads; a
// transaction that holds no input of its own commits them to prove the
// member's generation (the broker checks it only for the partitions an
// offset commit names).
func (a *Admin) Positions(ctx context.Context, group string, partitions map[string][]int32) (map[string]map[int32]int64, error) {
	type result struct {
		pos map[string]map[int32]int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		pos, err := a.positions(ctx, group, partitions)
		done <- result{pos, err}
	}()
	select {
	case r := <-done:
		return r.pos, r.err
	case <-ctx.Done():
		// A coordinator that does not answer holds the request until the
		// client's read timeout; the caller does not wait for it.
		return nil, fmt.Errorf("kafka: positions of %q: %w", group, ctx.Err())
	}
}

// positionsBackoff is the pause before asking again for offsets that are
// not stable yet, or after the coordinator moved.
const positionsBackoff = 100 * time.Millisecond

func (a *Admin) positions(ctx context.Context, group string, partitions map[string][]int32) (map[string]map[int32]int64, error) {
	for {
		pos, retry, err := a.fetchPositions(group, partitions)
		if err == nil || !retry {
			return pos, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kafka: positions of %q: %w (last: %v)", group, ctx.Err(), err)
		case <-time.After(positionsBackoff):
		}
	}
}

// fetchPositions asks once; retry says whether asking again may help
// (offsets not stable yet, a coordinator moving or not reached).
func (a *Admin) fetchPositions(group string, partitions map[string][]int32) (_ map[string]map[int32]int64, retry bool, _ error) {
	coordinator, err := a.client.Coordinator(group)
	if err != nil {
		return nil, !IsRefused(err), fmt.Errorf("kafka: coordinator of %q: %w", group, err)
	}
	req := sarama.NewOffsetFetchRequest(a.client.Config().Version, group, partitions)
	if req.Version < 7 {
		return nil, false, fmt.Errorf("kafka: positions of %q: offset fetch v%d cannot require stable offsets", group, req.Version)
	}
	req.RequireStable = true
	resp, err := coordinator.FetchOffset(req)
	if err != nil {
		_ = a.client.RefreshCoordinator(group)
		return nil, true, fmt.Errorf("kafka: committed offsets of %q: %w", group, err)
	}
	if gerr := resp.GroupError(); gerr != sarama.ErrNoError {
		return nil, positionsRetry(group, gerr, a.client), fmt.Errorf("kafka: committed offsets of %q: %w", group, gerr)
	}
	out := make(map[string]map[int32]int64, len(partitions))
	for topic, ps := range partitions {
		out[topic] = make(map[int32]int64, len(ps))
		for _, p := range ps {
			b := resp.GetBlock(topic, p)
			if b == nil {
				return nil, true, fmt.Errorf("kafka: committed offset of %q on %s/%d: %w", group, topic, p, sarama.ErrIncompleteResponse)
			}
			if b.Err != sarama.ErrNoError {
				return nil, positionsRetry(group, b.Err, a.client), fmt.Errorf("kafka: committed offset of %q on %s/%d: %w", group, topic, p, b.Err)
			}
			off := b.Offset
			if off < 0 {
				if off, err = a.client.GetOffset(topic, p, sarama.OffsetOldest); err != nil {
					return nil, Retriable(err), fmt.Errorf("kafka: log start of %s/%d: %w", topic, p, err)
				}
			}
			out[topic][p] = off
		}
	}
	return out, false, nil
}

// positionsRetry says whether an offset fetch answered kerr may succeed
// when asked again, and looks the coordinator up again when it moved.
func positionsRetry(group string, kerr sarama.KError, client sarama.Client) bool {
	switch kerr {
	case sarama.ErrNotCoordinatorForConsumer, sarama.ErrConsumerCoordinatorNotAvailable:
		_ = client.RefreshCoordinator(group)
		return true
	case sarama.ErrUnstableOffsetCommit, sarama.ErrOffsetsLoadInProgress:
		return true
	}
	return false
}
