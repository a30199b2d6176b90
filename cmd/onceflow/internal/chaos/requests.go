package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The requests whose handling the embedded broker's faults disturb, by
// the name the report uses.
var requestKeys = map[string]kmsg.Key{
	"produce":           kmsg.Produce,
	"end-txn":           kmsg.EndTxn,
	"txn-offset-commit": kmsg.TxnOffsetCommit,
}

// requestNames lists requestKeys' names in a fixed order (the seeded
// choice must not depend on map order).
var requestNames = []string{"produce", "end-txn", "txn-offset-commit"}

// requestErrors are the errors injected per request: each one a broker
// may answer without having applied the request, so the client must
// retry, abort or recreate its producer, never go on as if it succeeded.
var requestErrors = map[string][]*kerr.Error{
	"produce":           {kerr.NotLeaderForPartition, kerr.NotEnoughReplicas, kerr.RequestTimedOut, kerr.UnknownServerError},
	"end-txn":           {kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.ConcurrentTransactions, kerr.CoordinatorLoadInProgress},
	"txn-offset-commit": {kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.RequestTimedOut},
}

// Bounds of a request fault: how long it lasts, and the delay added to a
// delayed request (past the replicas' commit deadline, half their 8 s
// transaction timeout, at the top: an outcome the replica cannot know).
const (
	reqMinFault = 2 * time.Second
	reqMaxFault = 8 * time.Second
	reqMinDelay = 100 * time.Millisecond
	reqMaxDelay = 6 * time.Second
)

// requestFaults disturbs the embedded broker's handling of a replica's
// Produce, EndTxn and TxnOffsetCommit requests through kfake's control
// hooks: while a fault is on for a request kind, every other such request
// is answered with an error (not applied) or delayed and then handled.
// The input producer's requests (not transactional) are left alone.
type requestFaults struct {
	c  *kfake.Cluster
	mu struct {
		sync.Mutex
		active string // request name under fault; "" none
		until  time.Time
		n      int // requests seen under this fault
		rnd    *rand.Rand
		errors map[string]int
		delays map[string]int
	}
}

// newRequestFaults installs the control hooks on c; they do nothing until
// a fault is on.
func newRequestFaults(c *kfake.Cluster, seed int64) *requestFaults {
	rf := &requestFaults{c: c}
	rf.mu.rnd = rand.New(rand.NewPCG(uint64(seed), 0x72657173))
	rf.mu.errors, rf.mu.delays = map[string]int{}, map[string]int{}
	for _, name := range requestNames {
		c.ControlKey(int16(requestKeys[name]), func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			return rf.control(name, req)
		})
	}
	return rf
}

// control decides for one request: answer with an error, delay it, or
// leave it be.
func (rf *requestFaults) control(name string, req kmsg.Request) (kmsg.Response, error, bool) {
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.TransactionID == nil {
		return nil, nil, false // the input producer
	}
	rf.mu.Lock()
	if rf.mu.active != name || time.Now().After(rf.mu.until) {
		rf.mu.Unlock()
		return nil, nil, false
	}
	rf.mu.n++
	if rf.mu.n%2 == 1 { // every other request passes, so work goes on
		rf.mu.Unlock()
		return nil, nil, false
	}
	delay := rf.mu.rnd.IntN(2) == 0
	var code *kerr.Error
	var d time.Duration
	if delay {
		d = reqMinDelay + time.Duration(rf.mu.rnd.Int64N(int64(reqMaxDelay-reqMinDelay)))
		rf.mu.delays[name]++
	} else {
		errs := requestErrors[name]
		code = errs[rf.mu.rnd.IntN(len(errs))]
		rf.mu.errors[name]++
	}
	rf.mu.Unlock()
	if delay {
		// Sleeping here would stop the whole broker: SleepControl lets
		// other connections go on meanwhile.
		rf.c.SleepControl(func() { time.Sleep(d) })
		return nil, nil, false
	}
	return errorResponse(req, code.Code), nil, true
}

// errorResponse answers req with code (per partition where the response
// has partitions).
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.TxnOffsetCommitRequest:
		resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.EndTxnRequest:
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = code
		return resp
	}
	panic(fmt.Sprintf("chaos: no error response for %T", req))
}

// start turns a fault on for name until the deadline.
func (rf *requestFaults) start(name string, until time.Time) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.mu.active, rf.mu.until, rf.mu.n = name, until, 0
}

// stop turns the fault off.
func (rf *requestFaults) stop() {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.mu.active = ""
}

// counts returns the errors and delays injected so far, per request.
func (rf *requestFaults) counts() (errors, delays map[string]int) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	errors, delays = map[string]int{}, map[string]int{}
	for k, v := range rf.mu.errors {
		errors[k] = v
	}
	for k, v := range rf.mu.delays {
		delays[k] = v
	}
	return errors, delays
}

// requestFault disturbs one kind of request on the embedded broker for 2
// to 8 s: every other such request of a replica fails with an error or is
// delayed by up to 6 s.
func (r *runner) requestFault(ctx context.Context, f *Fault) error {
	name := requestNames[r.rnd.IntN(len(requestNames))]
	d := reqMinFault + time.Duration(r.rnd.Int64N(int64(reqMaxFault-reqMinFault)))
	before, beforeDelays := r.reqs.counts()
	r.reqs.start(name, time.Now().Add(d))
	err := sleep(ctx, d)
	r.reqs.stop()
	after, afterDelays := r.reqs.counts()
	errs, delays := after[name]-before[name], afterDelays[name]-beforeDelays[name]
	r.res.RequestFaults++
	r.res.InjectedErrors, r.res.InjectedDelays = after, afterDelays
	f.Target = name
	f.Note = fmt.Sprintf("for %.1fs: %d errors, %d delays injected", d.Seconds(), errs, delays)
	return err
}
