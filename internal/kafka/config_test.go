package kafka

import (
	"testing"
	"time"
)

// The transactional retry backoff starts short (a transaction begun right
// after a commit meets CONCURRENT_TRANSACTIONS for a few ms) and still
// gives the 50 retries a budget of seconds, for a coordinator that moves
// or loads.
func TestTxnRetryBackoff(t *testing.T) {
	if d := txnRetryBackoff(0, 50); d != 2*time.Millisecond {
		t.Errorf("first retry waits %v, want 2ms", d)
	}
	var total time.Duration
	prev := time.Duration(0)
	for r := range 50 {
		d := txnRetryBackoff(r, 50)
		if d < prev || d > 100*time.Millisecond {
			t.Errorf("retry %d waits %v after %v", r, d, prev)
		}
		prev = d
		total += d
	}
	if total < 2*time.Second {
		t.Errorf("50 retries wait %v in all; want at least 2s", total)
	}
	cfg := producerConfig(Client{Brokers: []string{"b:9092"}}, Timeouts{}.WithDefaults(), "tx", 0)
	if cfg.Producer.Transaction.Retry.BackoffFunc == nil {
		t.Error("the transactional producer does not use txnRetryBackoff")
	}
}

// After a crash mid-commit the new owner's offset fetch is answered
// UNSTABLE_OFFSET_COMMIT until the broker aborts the transaction: up to the
// transaction timeout plus the broker's abort check interval. sarama's
// retry budget for that fetch must outlast it, or the session fails and the
// group rejoins in a loop. The producer, on the other side, must not wait
// on any request longer than a commit may take.
func TestRetryBudgets(t *testing.T) {
	for _, tm := range []Timeouts{{}, {Session: 30 * time.Second, Transaction: 25 * time.Second}, {Session: 3 * time.Second}} {
		tm = tm.WithDefaults()
		cfg := consumerConfig(Client{Brokers: []string{"b:9092"}}, tm, "a")
		budget := time.Duration(cfg.Metadata.Retry.Max) * cfg.Metadata.Retry.Backoff
		if worst := tm.Transaction + BrokerAbortCheckInterval; budget <= worst {
			t.Errorf("transaction timeout %v: stable offset fetch retried for %v, not beyond %v", tm.Transaction, budget, worst)
		}
		p := producerConfig(Client{Brokers: []string{"b:9092"}}, tm, "tx", 1<<20)
		if p.Net.ReadTimeout > tm.Commit || p.Producer.Timeout >= p.Net.ReadTimeout {
			t.Errorf("commit timeout %v: producer read timeout %v, produce timeout %v", tm.Commit, p.Net.ReadTimeout, p.Producer.Timeout)
		}
		if tm.Commit >= tm.Transaction {
			t.Errorf("commit timeout %v not below the transaction timeout %v", tm.Commit, tm.Transaction)
		}
	}
}
