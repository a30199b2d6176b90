package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Replicas of one application start together and create the same internal
// topics: all but one are told the topic already exists, and on a real
// broker a metadata request right after may not show it yet (creation
// spreads to the brokers asynchronously). That is not an ACL hiding the
// topic: every replica must go on. On the embedded broker, or on real
// Kafka with ONCEFLOW_KAFKA_BROKERS, where the race shows.
func TestConcurrentEnsureOfTheSameTopics(t *testing.T) {
	brokers := testBrokers(t)
	run := time.Now().UnixNano()
	want := map[string]int32{}
	for i := range 12 {
		want[fmt.Sprintf("ensure-race-%d-%d", run, i)] = 3
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const replicas = 3
	admins := make([]*Admin, replicas)
	for i := range admins {
		a, err := Connect(ctx, Client{Brokers: brokers})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		admins[i] = a
	}
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	start := make(chan struct{})
	for i, a := range admins {
		wg.Go(func() {
			<-start
			have, err := a.Ensure(want, nil)
			if err == nil && len(have) != len(want) {
				err = fmt.Errorf("%d topics, want %d", len(have), len(want))
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: Ensure: %v", i, err)
		}
	}
}
