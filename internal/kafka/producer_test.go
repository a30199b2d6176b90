package kafka

import (
	"testing"

	"github.com/IBM/sarama"
)

// sarama hands over the failures of one produce request one by one; the
// engine aborts at the first, then Resets the producer. Failures of that
// transaction's records that arrive after the Reset must not fail the next
// transaction (a spurious abort), nor count as its tracked records.
func TestFailureAfterResetDoesNotLeak(t *testing.T) {
	p := &Producer{track: true}
	p.mu.offsets = map[string]map[int32]int64{}
	p.tags.Store(newTags(0))

	old := p.message(&Message{Topic: "out", Value: []byte("a")})
	oldTracked := p.message(&Message{Topic: "changelog", Value: []byte("b"), Track: true})
	p.failed(&sarama.ProducerError{Msg: old, Err: sarama.ErrInvalidMessage})
	if p.Err() == nil {
		t.Fatal("a failure of the open transaction was not reported")
	}
	p.Reset() // the transaction was aborted
	p.ResetTracked()
	p.failed(&sarama.ProducerError{Msg: old, Err: sarama.ErrInvalidMessage})
	p.failed(&sarama.ProducerError{Msg: oldTracked, Err: sarama.ErrInvalidMessage})
	if err := p.Err(); err != nil {
		t.Errorf("a failure of the aborted transaction, arriving after Reset, fails the next one: %v", err)
	}
	if p.mu.trackSettled != 0 {
		t.Errorf("a record of the aborted transaction counts as settled in the next: %d", p.mu.trackSettled)
	}

	cur := p.message(&Message{Topic: "out", Value: []byte("c")})
	p.failed(&sarama.ProducerError{Msg: cur, Err: sarama.ErrInvalidMessage})
	if p.Err() == nil {
		t.Error("a failure of the current transaction was not reported")
	}
	if got := p.settled.Load(); got != 4 {
		t.Errorf("settled %d, want 4 (every failure settles a record, whatever its transaction)", got)
	}
}
