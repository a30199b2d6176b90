package chaos

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Fault is one injected fault, for the report.
type Fault struct {
	// At is the time since the start of the run, in seconds.
	At     float64 `json:"at_seconds"`
	Kind   string  `json:"kind"`
	Target string  `json:"target"`
	// Seconds is how long the fault lasted (a kill: until the restart).
	Seconds float64 `json:"seconds"`
	// Note says more: the broker's role, how long the fault lasted.
	Note string `json:"note,omitempty"`
}

// nextKind deals the next fault kind from a deck of cfg.Faults, shuffled
// (seeded) anew each round.
func (r *runner) nextKind() string {
	if len(r.deck) == 0 {
		r.deck = slices.Clone(r.cfg.Faults)
		r.rnd.Shuffle(len(r.deck), func(i, j int) { r.deck[i], r.deck[j] = r.deck[j], r.deck[i] })
	}
	kind := r.deck[0]
	r.deck = r.deck[1:]
	return kind
}

// inject injects one fault after another, at random intervals, until the
// deadline. Faults are timed from start.
func (r *runner) inject(ctx context.Context, start, deadline time.Time) error {
	for {
		wait := r.cfg.MinInterval + time.Duration(r.rnd.Int64N(int64(r.cfg.MaxInterval-r.cfg.MinInterval)+1))
		if time.Now().Add(wait).After(deadline) {
			return sleep(ctx, time.Until(deadline))
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		if err := r.restartExited(); err != nil {
			return err
		}
		kind := r.nextKind()
		began := time.Now()
		f := Fault{At: began.Sub(start).Seconds(), Kind: kind}
		var err error
		switch kind {
		case FaultReplicaKill:
			err = r.killReplica(ctx, &f)
		case FaultReplicaPause:
			err = r.pauseReplica(ctx, &f)
		case FaultBrokerKill:
			err = r.killBroker(ctx, &f)
		case FaultNetwork:
			err = r.netFault(ctx, &f)
		case FaultRequest:
			err = r.requestFault(ctx, &f)
		case FaultOperator:
			err = r.operatorFault(ctx, &f)
		}
		if err != nil {
			return err
		}
		f.Seconds = time.Since(began).Seconds()
		r.res.Faults = append(r.res.Faults, f)
		fmt.Fprintf(r.cfg.Progress, "%6.1fs %s %s %s\n", f.At, f.Kind, f.Target, f.Note)
	}
}

// killReplica kills a replica with SIGKILL and starts it again on its own
// state after up to 2 s.
func (r *runner) killReplica(ctx context.Context, f *Fault) error {
	rep := r.reps[r.rnd.IntN(len(r.reps))]
	rep.Kill()
	down := time.Duration(r.rnd.Int64N(int64(2 * time.Second)))
	if err := sleep(ctx, down); err != nil {
		return err
	}
	r.res.ReplicaKills++
	f.Target, f.Note = rep.Name, fmt.Sprintf("SIGKILL, restarted after %.1fs", down.Seconds())
	return rep.Start()
}

// pauseReplica stops a replica with SIGSTOP for the session timeout plus
// 5 s, so the group evicts it and its partitions move, then continues it:
// a zombie whose late commits must be fenced.
func (r *runner) pauseReplica(ctx context.Context, f *Fault) error {
	rep := r.reps[r.rnd.IntN(len(r.reps))]
	if err := rep.Pause(); err != nil {
		return err
	}
	stopped := r.cfg.SessionTimeout + 5*time.Second
	err := sleep(ctx, stopped)
	if rerr := rep.Resume(); err == nil {
		err = rerr
	}
	r.res.ReplicaPauses++
	f.Target, f.Note = rep.Name, fmt.Sprintf("SIGSTOP for %.0fs, then SIGCONT", stopped.Seconds())
	return err
}

// Whom a broker kill aims at.
const (
	aimTxnCoordinator   = "txn-coordinator"
	aimGroupCoordinator = "group-coordinator"
	aimAny              = "any"
)

// nextAim deals whom the next broker kill aims at from a shuffled deck of
// the three, so every three broker kills include each once.
func (r *runner) nextAim() string {
	if len(r.aims) == 0 {
		r.aims = []string{aimTxnCoordinator, aimGroupCoordinator, aimAny}
		r.rnd.Shuffle(len(r.aims), func(i, j int) { r.aims[i], r.aims[j] = r.aims[j], r.aims[i] })
	}
	aim := r.aims[0]
	r.aims = r.aims[1:]
	return aim
}

// killBroker kills a broker with SIGKILL and starts it again on its data
// after 2 to 10 s. Of every three broker kills, one aims at the
// transaction coordinator of a replica's transactional id, one at the
// group's coordinator (with allstages, every other time the sink runners'
// group's), one at any broker.
func (r *runner) killBroker(ctx context.Context, f *Fault) error {
	node := int32(1 + r.rnd.IntN(r.cluster.nodes))
	role := "a broker chosen at random"
	switch r.nextAim() {
	case aimTxnCoordinator:
		rep := r.reps[r.rnd.IntN(len(r.reps))]
		txnID := r.app + "-" + rep.Name
		coord, err := txnCoordinator(ctx, r.adm, txnID)
		if err != nil {
			return err
		}
		node, role = coord, "the transaction coordinator of "+txnID
		r.res.CoordinatorKills++
	case aimGroupCoordinator:
		// With allstages, every other one aims at the sink runners' group.
		group := r.app
		if r.cfg.Topology == TopologyAllStages && r.res.GroupCoordinatorKills%2 == 1 {
			group = r.app + "-sinks"
		}
		coord, err := groupCoordinator(ctx, r.adm, group)
		if err != nil {
			return err
		}
		node, role = coord, "the coordinator of group "+group
		r.res.GroupCoordinatorKills++
	}
	if err := r.cluster.kill(ctx, node); err != nil {
		return err
	}
	r.res.BrokerKills++
	down := 2*time.Second + time.Duration(r.rnd.Int64N(int64(8*time.Second)))
	if err := sleep(ctx, down); err != nil {
		return err
	}
	began := time.Now()
	if err := r.cluster.start(ctx, node); err != nil {
		return err
	}
	r.res.BrokerRestarts++
	f.Target = fmt.Sprintf("broker %d", node)
	f.Note = fmt.Sprintf("(%s) kill -9, started again on its data after %.1fs, back in %.1fs", role, down.Seconds(), time.Since(began).Seconds())
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
