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
