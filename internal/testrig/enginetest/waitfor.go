package enginetest

import (
	"testing"
	"time"
)

// pollEvery is how often WaitFor asks its condition again.
const pollEvery = 10 * time.Millisecond

// WaitFor waits until cond holds, asking it every pollEvery, and fails the
// test when it does not hold within the given time: a test waits for what
// it needs rather than sleeping for a guess of how long it takes.
func WaitFor(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %v", what, within)
		}
		time.Sleep(pollEvery)
	}
}
