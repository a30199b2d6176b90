package kafka

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// TxnDescription is a transactional id's transaction as its coordinator
// describes it (KIP-664 DescribeTransactions, Kafka 3.0 and later).
type TxnDescription struct {
	// State is the coordinator's: Empty, Ongoing, PrepareCommit,
	// PrepareAbort, CompleteCommit, CompleteAbort, Dead or
	// PrepareEpochFence.
	State string
	// Start is when the open transaction began (zero when none is open).
	Start      time.Time
	ProducerID int64
	Epoch      int16
	Timeout    time.Duration
	// Partitions are those in the transaction; while it is being ended,
	// those still without their commit or abort marker.
	Partitions map[string][]int32
}

// Open reports whether a transaction is open or being ended.
func (d TxnDescription) Open() bool {
	switch d.State {
	case "Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence":
		return true
	}
	return false
}

// Ending reports whether the coordinator is writing the transaction's
// markers: a producer initialised with the id now waits for them
// (CONCURRENT_TRANSACTIONS), so a new producer cannot end it sooner.
func (d TxnDescription) Ending() bool {
	return d.State == "PrepareCommit" || d.State == "PrepareAbort"
}

// errTransactionalIDNotFound is Kafka's TRANSACTIONAL_ID_NOT_FOUND, which
// sarama does not name.
const errTransactionalIDNotFound sarama.KError = 105

// DescribeTransaction asks the coordinator of id for its transaction. ok
// is false when the coordinator does not know the id. Like every admin
// call it has no context: run it off any path that must not wait.
func (a *Admin) DescribeTransaction(id string) (d TxnDescription, ok bool, err error) {
	ta, isTA := a.admin.(sarama.TransactionClusterAdmin)
	if !isTA {
		return d, false, errors.New("kafka: the admin client cannot describe transactions")
	}
	states, err := ta.DescribeTransactions([]string{id})
	if err != nil {
		return d, false, fmt.Errorf("kafka: describe transaction %q: %w", id, err)
	}
	st, found := states[id]
	switch {
	case !found || st.ErrorCode == errTransactionalIDNotFound:
		return d, false, nil
	case st.ErrorCode != sarama.ErrNoError:
		return d, false, fmt.Errorf("kafka: describe transaction %q: %w", id, st.ErrorCode)
	}
	d = TxnDescription{State: st.TransactionState, ProducerID: st.ProducerID, Epoch: st.ProducerEpoch,
		Timeout: st.TransactionTimeout, Partitions: map[string][]int32{}}
	if st.TransactionStartTime >= 0 && d.Open() {
		d.Start = time.UnixMilli(st.TransactionStartTime)
	}
	for _, t := range st.Topics {
		d.Partitions[t.Topic] = append(d.Partitions[t.Topic], t.Partitions...)
	}
	return d, true, nil
}
