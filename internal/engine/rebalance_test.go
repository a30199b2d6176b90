package engine_test

import (
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// loader writes records in chunks until stopped and reports how many.
type loader struct {
	stop chan struct{}
	done chan int
}

func startLoad(env *enginetest.Env, topic string, from, chunk int) *loader {
	l := &loader{stop: make(chan struct{}), done: make(chan int, 1)}
	go func() {
		n := from
		defer func() { l.done <- n }()
		for {
			select {
			case <-l.stop:
				return
			default:
			}
			env.Produce(topic, n, chunk)
			n += chunk
			time.Sleep(2 * time.Millisecond) // the load's pace, not a wait
		}
	}()
	return l
}

func (l *loader) finish() int {
	close(l.stop)
	return <-l.done
}
