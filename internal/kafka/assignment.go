package kafka

// The wire form of what the task assignor exchanges through the group
// protocol: a member's subscription user data (what it owned) and the
// leader's assignment user data (what every member owns now).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Task is one sub-topology on one partition: the unit the group assigns.
// Every topic-partition a task reads goes to the member that owns it.
type Task struct {
	SubTopology int32
	Partition   int32
}

func (t Task) String() string { return fmt.Sprintf("%d_%d", t.SubTopology, t.Partition) }

// compareTasks orders tasks by sub-topology, then partition.
func compareTasks(a, b Task) int {
	if a.SubTopology != b.SubTopology {
		return int(a.SubTopology) - int(b.SubTopology)
	}
	return int(a.Partition) - int(b.Partition)
}

// Assignment is what the group leader decided for one generation, as one
// member received it.
type Assignment struct {
	Generation int32
	// Tasks are this member's, sorted, numbered by the leader's topology
	// (a member whose topology differs numbers its sub-topologies
	// otherwise: Topics says what it was given in its own terms).
	Tasks []Task
	// Topics are this member's topic-partitions.
	Topics map[string][]int32
	// Owners maps every assigned task of the group to its owner: the
	// owner's instance id (its member id when it has none).
	Owners map[Task]string
	// Withheld are tasks planned for this member that another member
	// still held: a follow-up rebalance assigns them once it let them go.
	Withheld []Task
}

// The user data formats. Each starts with its version; a later version
// only appends fields after those of the versions before it, so a reader
// reads the fields it knows and ignores the rest. Room is kept that way
// for what later releases exchange: standby tasks, task lags, the
// endpoints that answer queries.
const (
	subscriptionVersion = 1
	assignmentVersion   = 2 // 2: Withheld
)

// subscription is what a member tells the leader when it joins: who it is
// and what it owned in the generation it last took part in.
type subscription struct {
	Version    uint16
	InstanceID string
	Generation int32 // of Owned; -1: none
	Owned      []Task
}

func (s subscription) encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, subscriptionVersion)
	b = appendString(b, s.InstanceID)
	b = binary.BigEndian.AppendUint32(b, uint32(s.Generation))
	return appendTasks(b, s.Owned)
}

func decodeSubscription(b []byte) (subscription, error) {
	d := decoder{b: b}
	s := subscription{Version: d.uint16()}
	if d.err == nil && s.Version == 0 {
		return subscription{}, errors.New("kafka: subscription user data: version 0")
	}
	s.InstanceID = d.string()
	s.Generation = int32(d.uint32())
	s.Owned = d.tasks()
	if d.err != nil {
		return subscription{}, fmt.Errorf("kafka: subscription user data: %w", d.err)
	}
	return s, nil
}

// assignmentData is what the leader sends each member: its own tasks and
// the owner of every task of the group.
type assignmentData struct {
	Version uint16
	Tasks   []Task
	Owners  map[string][]Task // owner → its tasks
	// Withheld are the tasks planned for the member that another member
	// still holds (version 2).
	Withheld []Task
}

func (a assignmentData) encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, assignmentVersion)
	b = appendTasks(b, a.Tasks)
	b = binary.BigEndian.AppendUint32(b, uint32(len(a.Owners)))
	for _, o := range slices.Sorted(maps.Keys(a.Owners)) {
		b = appendString(b, o)
		b = appendTasks(b, a.Owners[o])
	}
	return appendTasks(b, a.Withheld)
}

func decodeAssignment(b []byte) (assignmentData, error) {
	d := decoder{b: b}
	a := assignmentData{Version: d.uint16()}
	if d.err == nil && a.Version == 0 {
		return assignmentData{}, errors.New("kafka: assignment user data: version 0")
	}
	a.Tasks = d.tasks()
	n := d.count(6) // an owner takes at least 6 bytes
	a.Owners = make(map[string][]Task, n)
	for range n {
		o := d.string()
		a.Owners[o] = d.tasks()
	}
	if a.Version >= 2 {
		a.Withheld = d.tasks()
	}
	if d.err != nil {
		return assignmentData{}, fmt.Errorf("kafka: assignment user data: %w", d.err)
	}
	return a, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendTasks(b []byte, ts []Task) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(ts)))
	for _, t := range ts {
		b = binary.BigEndian.AppendUint32(b, uint32(t.SubTopology))
		b = binary.BigEndian.AppendUint32(b, uint32(t.Partition))
	}
	return b
}

// decoder reads big-endian fields; the first error sticks and every read
// after it returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.err = fmt.Errorf("%d bytes short", n-len(d.b))
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) uint16() uint16 {
	if b := d.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (d *decoder) uint32() uint32 {
	if b := d.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) string() string { return string(d.take(int(d.uint16()))) }

// count reads an element count and checks that the rest of the input can
// hold that many elements of at least size bytes each.
func (d *decoder) count(size int) int {
	n := d.uint32()
	if d.err == nil && uint64(n)*uint64(size) > uint64(len(d.b)) {
		d.err = fmt.Errorf("%d elements do not fit in %d bytes", n, len(d.b))
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

func (d *decoder) tasks() []Task {
	n := d.count(8)
	ts := make([]Task, 0, n)
	for range n {
		ts = append(ts, Task{SubTopology: int32(d.uint32()), Partition: int32(d.uint32())})
	}
	return ts
}

// AssignedTasks decodes the tasks of one member's assignment from its
// user data (what the task assignor's leader sent it), for tools that
// describe a group.
func AssignedTasks(userData []byte) ([]Task, error) {
	a, err := decodeAssignment(userData)
	if err != nil {
		return nil, err
	}
	return a.Tasks, nil
}
