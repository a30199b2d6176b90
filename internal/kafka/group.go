package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/onceflow/onceflow/internal/wire"
)

// ErrFencedInstance means another live replica uses the same instance id.
// Not retryable: instance ids must be unique among live replicas.
var ErrFencedInstance = errors.New("kafka: another replica joined with the same instance id")

// Record is one consumed record.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []wire.Header
	Timestamp time.Time
}

// Batch is consecutive records of one partition.
type Batch struct {
	Topic     string
	Partition int32
	Records   []Record
	// HighWaterMark is the partition's end offset as last fetched: the
	// offset after the last record the broker holds (for read_committed:
	// after the last stable one).
	HighWaterMark int64
	// Bytes is the size of the records' keys and values.
	Bytes int
	// Claim identifies the claim that read the batch (see ClaimHandler):
	// a partition revoked and claimed again within one session has a new
	// claim, so a batch still on its way from the old one can be told
	// apart.
	Claim uint64
}

// MaxBatchBytes bounds a batch's keys and values (a batch holds at least
// one record, whatever its size): the batches waiting for the engine are
// bounded in bytes, not only in records, so a backlog of large records
// held up by a slow output does not pile up in memory.
const MaxBatchBytes = 256 << 10

// Session is one generation of group membership.
type Session interface {
	// Context ends when the session does (rebalance, shutdown, or Cancel).
	Context() context.Context
	// Claims are the partitions this member owns, per topic.
	Claims() map[string][]int32
	// Metadata identifies this member and generation for transactional
	// offset commits.
	Metadata() GroupMetadata
	// Assignment is what the task assignor decided for this generation;
	// ok is false for a group without one (NewGroup).
	Assignment() (a Assignment, ok bool)
	// Hold waits while this member is joining a new generation within the
	// session (cooperative protocol), until the session knows the
	// generation the join established or ctx ends, and then holds off the
	// member's next JoinGroup until release is called (at most the commit
	// timeout). An offset commit made in between carries the generation
	// the coordinator holds: it refuses one naming the generation before
	// (ILLEGAL_GENERATION) from the moment a join completes. For a group
	// without the task assignor it returns at once.
	Hold(ctx context.Context) (release func())
	// Heartbeat asks the group coordinator whether this member still holds
	// its generation: nil when it does, an error matching IsMembershipLost
	// when it was evicted, replaced or the group rebalances, another error
	// when the coordinator could not be asked before ctx ended.
	Heartbeat(ctx context.Context) error
}

// Handler receives the batches of one session.
type Handler interface {
	// Setup runs when a session starts and returns where its batches go.
	Setup(s Session) (chan<- Batch, error)
	// Cleanup runs after every partition of the session stopped
	// delivering, before the member rejoins: the revoke window.
	Cleanup(s Session) error
}

// ClaimHandler is a Handler told of each claim of a session. Under the
// cooperative protocol (NewTaskGroup) claims are added and revoked while
// the session goes on: Setup runs once, with the first claims.
type ClaimHandler interface {
	Handler
	// Claimed runs in the claim's own goroutine before its first batch is
	// handed on; claim is the Batch.Claim of its batches. The claims of
	// Setup are claimed too. ErrClaimRevoked says the claim was revoked
	// before it was ready: nothing is handed on and Revoked is not called.
	// Another error ends the session.
	Claimed(s Session, topic string, partition int32, claim uint64) error
	// Revoked runs in the claim's goroutine when the group took the
	// partition away while the session goes on, after the claim's last
	// batch was handed on (or dropped, when the handler did not take it
	// and the group had revoked the claim meanwhile): the handler is done with the partition when it
	// returns (within the rebalance timeout), and sarama releases it to
	// its next owner.
	Revoked(s Session, topic string, partition int32, claim uint64)
}

// PartitionHandler is a Handler that takes each partition's batches on a
// channel of its own: a partition whose handler is behind then holds up
// only its own claim, while one shared channel would hold up every claim
// behind the batch it cannot take.
type PartitionHandler interface {
	Handler
	// Partition returns where the batches of a claimed partition go,
	// called once per claim after Setup (nil: the channel Setup
	// returned).
	Partition(topic string, partition int32) chan<- Batch
}

// ErrClaimRevoked is what ClaimHandler.Claimed returns for a claim the
// group revoked before the handler was ready for it.
var ErrClaimRevoked = errors.New("kafka: the claim was revoked before it started")

// Group is a consumer group member with a static instance id.
type Group struct {
	client     sarama.Client
	cg         sarama.ConsumerGroup
	groupID    string
	instanceID string
	batchSize  int
	tasks      *taskAssignor // nil: topic-partitions are assigned one by one
	claims     atomic.Uint64 // the last claim id given out
	mu         struct {
		sync.Mutex
		memberID string
	}
}

// NewGroup creates a member of groupID whose topic-partitions are assigned
// one by one (sticky). Nothing joins until Consume.
func NewGroup(c Client, t Timeouts, groupID, instanceID string, batchSize int) (*Group, error) {
	return newGroup(c, t, groupID, instanceID, batchSize, nil, nil)
}

// NewBalancedGroup creates a member of groupID whose topics' partitions
// are balanced topic by topic: each member holds about as many partitions
// of every topic as the others (6 partitions of each of two topics over 3
// members: 2 and 2 each), where NewGroup's assignor balances only the
// total and can give one topic's partitions to some members and not to
// others. Partitions stay with their member across rebalances where the
// balance allows. Rebalances are eager, as NewGroup's. The member also
// offers NewGroup's assignor, which a group uses as long as one of its
// members (an earlier release) offers nothing else. Nothing joins until
// Consume.
func NewBalancedGroup(c Client, t Timeouts, groupID, instanceID string, batchSize int) (*Group, error) {
	return newGroup(c, t, groupID, instanceID, batchSize, nil, newBalancedAssignor(instanceID))
}

// NewTaskGroup creates a member of groupID that is assigned tasks: subOf
// maps each source topic to its sub-topology, and partition p of every
// topic of one sub-topology goes to one member (see TaskAssignorName).
// Its rebalances are cooperative: a session lasts across them, and only
// the tasks that move are revoked and claimed (see ClaimHandler). Nothing
// joins until Consume.
func NewTaskGroup(c Client, t Timeouts, groupID, instanceID string, subOf map[string]int32) (*Group, error) {
	return newGroup(c, t, groupID, instanceID, 0, newTaskAssignor(instanceID, subOf, t.WithDefaults().Commit), nil)
}

// newGroup creates a member assigned tasks (tasks), topics balanced one by
// one (balanced), or topic-partitions by sarama's sticky assignor.
func newGroup(c Client, t Timeouts, groupID, instanceID string, batchSize int, tasks, balanced *taskAssignor) (*Group, error) {
	cfg := consumerConfig(c, t.WithDefaults(), instanceID)
	switch {
	case tasks != nil:
		cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{tasks}
	case balanced != nil:
		// Preferred first; the sticky one for groups with members of an
		// earlier release (see stickyBeside).
		cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{balanced, newStickyBeside()}
	}
	client, err := sarama.NewClient(c.Brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("kafka: group client: %w", err)
	}
	cg, err := sarama.NewConsumerGroupFromClient(groupID, client)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("kafka: consumer group %q: %w", groupID, err)
	}
	if batchSize <= 0 {
		batchSize = 512
	}
	return &Group{client: client, cg: cg, groupID: groupID, instanceID: instanceID, batchSize: batchSize, tasks: tasks}, nil
}

// Errors are the group's asynchronous errors; they must be drained.
func (g *Group) Errors() <-chan error { return g.cg.Errors() }

// Consume joins the group and runs one session until ctx ends or the
// group rebalances (a task group's session goes on through rebalances
// that leave its member in the group).
func (g *Group) Consume(ctx context.Context, topics []string, h Handler) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var followUp atomic.Bool
	if g.tasks != nil {
		g.tasks.setFollowUp(func() {
			followUp.Store(true)
			cancel()
		})
		defer g.tasks.setFollowUp(nil)
	}
	err := g.cg.Consume(sctx, topics, &adapter{g: g, h: h})
	if g.tasks != nil {
		g.tasks.joinEnded() // a join the session's end cut short
	}
	if followUp.Load() && ctx.Err() == nil {
		return nil // ended to join again at once: call Consume again
	}
	switch {
	case errors.Is(err, sarama.ErrFencedInstancedId):
		return fmt.Errorf("%w (%q): %v", ErrFencedInstance, g.instanceID, err)
	case errors.Is(err, sarama.ErrInconsistentGroupProtocol) && g.tasks != nil:
		return fmt.Errorf("kafka: group %q: its members offer no assignor in common with this one (%q): "+
			"members of an earlier release (which assigned topic-partitions one by one) are in the group; "+
			"this replica joins once they have left: %w", g.groupID, TaskAssignorName, err)
	}
	return err
}

// Leave removes this static member from the group at once, so its
// partitions move without waiting for the session timeout. (A static member
// that closes does not leave by itself.)
func (g *Group) Leave() error {
	g.mu.Lock()
	member := g.mu.memberID
	g.mu.Unlock()
	if member == "" {
		return nil // never joined
	}
	broker, err := g.client.Coordinator(g.groupID)
	if err != nil {
		return fmt.Errorf("kafka: leave group: %w", err)
	}
	id := g.instanceID
	reason := "the replica is shutting down"
	req := &sarama.LeaveGroupRequest{
		Version: 5,
		GroupId: g.groupID,
		Members: []sarama.MemberIdentity{{MemberId: member, GroupInstanceId: &id, Reason: &reason}},
	}
	resp, err := broker.LeaveGroup(req)
	if err != nil {
		return fmt.Errorf("kafka: leave group: %w", err)
	}
	if resp.Err != sarama.ErrNoError {
		return fmt.Errorf("kafka: leave group: %w", resp.Err)
	}
	for _, m := range resp.Members {
		if m.Err != sarama.ErrNoError && m.Err != sarama.ErrUnknownMemberId {
			return fmt.Errorf("kafka: leave group: %w", m.Err)
		}
	}
	return nil
}

// Close closes the member and its connections without leaving the group.
func (g *Group) Close() error { return g.cg.Close() }

// adapter turns sarama's per-claim callbacks into batches.
type adapter struct {
	g   *Group
	h   Handler
	out chan<- Batch
}

type session struct {
	s sarama.ConsumerGroupSession
	g *Group
}

func (s session) Context() context.Context   { return s.s.Context() }
func (s session) Claims() map[string][]int32 { return s.s.Claims() }
func (s session) Metadata() GroupMetadata {
	return GroupMetadata{GroupID: s.g.groupID, GenerationID: s.s.GenerationID(), MemberID: s.s.MemberID(), InstanceID: s.g.instanceID}
}
func (s session) Assignment() (Assignment, bool) {
	if s.g.tasks == nil {
		return Assignment{}, false
	}
	return s.g.tasks.assignment(s.s.GenerationID())
}

func (s session) Hold(ctx context.Context) (release func()) {
	if s.g.tasks == nil {
		return func() {}
	}
	return s.g.tasks.hold(ctx, s.s.Context(), func(assigned int32) bool { return s.s.GenerationID() >= assigned })
}

func (s session) Heartbeat(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.g.heartbeat(s.Metadata()) }() // bounded by the client's read timeout
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("kafka: heartbeat: %w", ctx.Err())
	}
}

func (g *Group) heartbeat(m GroupMetadata) error {
	b, err := g.client.Coordinator(g.groupID)
	if err != nil {
		return fmt.Errorf("kafka: group coordinator: %w", err)
	}
	req := &sarama.HeartbeatRequest{Version: 4, GroupId: m.GroupID, MemberId: m.MemberID, GenerationId: m.GenerationID}
	if m.InstanceID != "" {
		id := m.InstanceID
		req.GroupInstanceId = &id
	}
	resp, err := b.Heartbeat(req)
	if err != nil {
		_ = g.client.RefreshCoordinator(g.groupID)
		return fmt.Errorf("kafka: heartbeat: %w", err)
	}
	if resp.Err != sarama.ErrNoError {
		if coordinatorMoved(resp.Err) {
			_ = g.client.RefreshCoordinator(g.groupID)
		}
		return fmt.Errorf("kafka: heartbeat of generation %d: %w", m.GenerationID, resp.Err)
	}
	return nil
}

func (a *adapter) Setup(s sarama.ConsumerGroupSession) error {
	a.g.mu.Lock()
	a.g.mu.memberID = s.MemberID()
	a.g.mu.Unlock()
	out, err := a.h.Setup(session{s: s, g: a.g})
	a.out = out
	return err
}

func (a *adapter) Cleanup(s sarama.ConsumerGroupSession) error {
	return a.h.Cleanup(session{s: s, g: a.g})
}

// ConsumeClaim hands records on in batches: it blocks for the first record,
// then takes whatever else is already buffered, up to the batch size and
// MaxBatchBytes. A ClaimHandler is told of the claim first, and of its
// revocation after its last batch.
func (a *adapter) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	id := a.g.claims.Add(1)
	ch, _ := a.h.(ClaimHandler)
	sess := session{s: s, g: a.g}
	if ch != nil {
		if err := ch.Claimed(sess, claim.Topic(), claim.Partition(), id); errors.Is(err, ErrClaimRevoked) {
			return nil
		} else if err != nil {
			return err
		}
	}
	out := a.out
	if ph, ok := a.h.(PartitionHandler); ok {
		if c := ph.Partition(claim.Topic(), claim.Partition()); c != nil {
			out = c
		}
	}
	if a.feed(s, claim, id, out) && ch != nil && s.Context().Err() == nil {
		ch.Revoked(sess, claim.Topic(), claim.Partition(), id)
	}
	return nil
}

// feed hands the claim's records on to out until its messages end (it
// returns true) or the session does.
func (a *adapter) feed(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim, id uint64, out chan<- Batch) bool {
	ctx := s.Context()
	msgs := claim.Messages()
	var c converter
	for {
		var m *sarama.ConsumerMessage
		var ok bool
		select {
		case <-ctx.Done():
			return false
		case m, ok = <-msgs:
			if !ok {
				return true
			}
		}
		b := Batch{Topic: claim.Topic(), Partition: claim.Partition(), Records: make([]Record, 0, min(a.g.batchSize, 1+len(msgs))),
			HighWaterMark: claim.HighWaterMarkOffset(), Claim: id}
		b.Records = append(b.Records, c.convert(m))
		b.Bytes = len(m.Key) + len(m.Value)
	fill:
		for len(b.Records) < a.g.batchSize && b.Bytes < MaxBatchBytes {
			select {
			case m, ok = <-msgs:
				if !ok {
					break fill
				}
				b.Records = append(b.Records, c.convert(m))
				b.Bytes += len(m.Key) + len(m.Value)
			default:
				break fill
			}
		}
		switch a.handOn(ctx, claim, b, out) {
		case handedOn:
		case claimRevoked:
			return true
		case sessionEnded:
			return false
		}
		if !ok {
			return true
		}
	}
}

// handOnResult is what became of a batch handOn was given.
type handOnResult int

const (
	handedOn     handOnResult = iota
	claimRevoked              // the batch was dropped: the group took the partition away
	sessionEnded
)

// handOn hands b on. While the handler does not take it (a driver stuck in
// a commit, its queue full), it checks whether the group's latest
// assignment still gives this member the partition: when it no longer
// does, b and whatever the claim still delivers are dropped (the next
// owner reads them from the committed offsets), so that the handler learns
// of the revocation (ClaimHandler.Revoked) now rather than once it takes
// the batch, which a stuck one never does.
func (a *adapter) handOn(ctx context.Context, claim sarama.ConsumerGroupClaim, b Batch, out chan<- Batch) handOnResult {
	select {
	case <-ctx.Done():
		return sessionEnded
	case out <- b:
		return handedOn
	default:
	}
	var tick <-chan time.Time
	if a.g.tasks != nil {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return sessionEnded
		case out <- b:
			return handedOn
		case <-tick:
		}
		if a.g.tasks.holds(b.Topic, b.Partition) {
			continue
		}
		// sarama closes a revoked claim's messages: drain them.
		for {
			select {
			case <-ctx.Done():
				return sessionEnded
			case _, ok := <-claim.Messages():
				if !ok {
					return claimRevoked
				}
			}
		}
	}
}

// converter turns sarama's records into the engine's, for one claim. Header
// keys repeat from record to record: each distinct key is made a string
// once. Headers of one batch share one backing array.
type converter struct {
	keys    map[string]string
	headers []wire.Header // free room of the batch's backing array
}

// headerSlab is how many headers one backing array holds.
const headerSlab = 256

func (c *converter) convert(m *sarama.ConsumerMessage) Record {
	r := Record{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Timestamp}
	n := len(m.Headers)
	if n == 0 {
		return r
	}
	if len(c.headers) < n {
		c.headers = make([]wire.Header, max(n, headerSlab))
	}
	hs := c.headers[:n:n] // full slice expression: appending to it copies
	c.headers = c.headers[n:]
	for i, h := range m.Headers {
		hs[i] = wire.Header{Key: c.key(h.Key), Value: h.Value}
	}
	r.Headers = hs
	return r
}

// key returns k as a string, the same string for the same bytes.
func (c *converter) key(k []byte) string {
	if s, ok := c.keys[string(k)]; ok {
		return s
	}
	if c.keys == nil {
		c.keys = map[string]string{}
	}
	if len(c.keys) >= 64 {
		clear(c.keys) // keys that vary per record: do not hold them all
	}
	s := string(k)
	c.keys[s] = s
	return s
}
