package engine

// Punctuators: the timers of a topology's Process stages, fired per task
// inside the open transaction, so their state changes and outputs commit
// or are discarded with it. When they are due is the session's
// timerSchedule's (schedule.go): a rewind starts it afresh.

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/taskstate"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/statestore"
)

// streamTimers advances the stream time of a batch's task and fires its
// stream-time punctuators that became due.
func (d *driver) streamTimers(b *kafka.Batch, task statestore.Task) error {
	if !d.timers.hasStream(task.SubTopology) || !d.st.open() {
		return nil
	}
	var latest time.Time
	for i := range b.Records {
		if ts := b.Records[i].Timestamp; ts.After(latest) {
			latest = ts
		}
	}
	d.st.state.SetTask(task)
	if _, err := d.st.state.ObserveTime(latest); err != nil {
		return err
	}
	now := d.st.state.StreamTime(task)
	last := &b.Records[len(b.Records)-1]
	after := wire.Source(last.Topic, last.Partition, last.Offset)
	for tm := range d.timers.streamDue(task, now) {
		if err := d.punctuate(tm, task, now, after); err != nil {
			return err
		}
	}
	return nil
}

// wallTimers fires the wall-clock punctuators that became due on the
// session's tasks, opening a transaction when none is. A transaction it
// opened in which the punctuations did nothing is closed again at once,
// without a commit: an idle replica does not commit, nor sync its state,
// every interval.
func (d *driver) wallTimers() {
	now := d.e.cfg.Now()
	opened := false
	for tm, task := range d.timers.wallDue(d.tasks.claims(), now) {
		if !d.iv.open {
			if !d.begin() {
				return
			}
			opened = true
		}
		if err := d.punctuate(tm, task, now, ""); err != nil {
			d.fail("state", err)
			return
		}
	}
	if opened && d.idle() {
		d.closeIdle()
	}
}

// idle reports whether the open transaction holds nothing: no input, no
// output or rejection, no state change.
func (d *driver) idle() bool {
	return d.iv.empty() &&
		d.st.empty()
}

// closeIdle ends an open transaction that holds nothing. With nothing
// sent to any partition, sarama's abort is local (no EndTxn).
func (d *driver) closeIdle() {
	if d.e.cfg.ExactlyOnce {
		ctx, cancel := context.WithTimeout(context.Background(), d.e.cfg.Timeouts.Commit)
		err := d.p.Abort(ctx)
		cancel()
		if err != nil {
			d.fail("abort", err)
			return
		}
	}
	d.st.discard()
	d.reset()
}

// punctuate fires one timer on task, as if a record of the task arrived:
// its outputs, rejections and state join the open transaction. after
// names the last record processed before a stream-time firing ("" for a
// wall-clock one; see graph.Context.Punctuate). A punctuation that fails
// leaves nothing and is logged; the error returned is a state failure
// (the transaction cannot go on).
func (d *driver) punctuate(tm graph.TimerRef, task statestore.Task, at time.Time, after string) error {
	d.em.punctuation(tm.Node.Name, task, at)
	d.fence.wrote(task)
	if o := d.st.exec.Punctuate(tm, task, at, after, d.em); o.Kind == taskstate.Failed {
		d.e.log.Error("punctuation failed; its state changes and outputs are discarded, it runs again at its next interval",
			"node", tm.Node.Name, "task", taskName(task.SubTopology, task.Partition), "at", at, "error", o.Err)
	}
	return d.stage()
}
