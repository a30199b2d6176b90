package benchmarks

import (
	"fmt"
	"time"
)

// P99OverInterval is the one latency bound of the bench and its targets:
// exactly-once's p99 end to end should stay within the commit interval plus
// this much (a record waits at most one interval for its transaction, and
// the commit and the read add the rest).
const P99OverInterval = 30 * time.Millisecond

// p99BoundMs is the p99 bound at a commit interval, in milliseconds.
func p99BoundMs(commitInterval time.Duration) float64 {
	return ms(commitInterval + P99OverInterval)
}

// p99BoundText names the bound where reports state it.
func p99BoundText() string {
	return fmt.Sprintf("commit interval + %d ms", P99OverInterval.Milliseconds())
}
