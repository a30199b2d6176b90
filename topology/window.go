package topology

// Window definitions, windowed keys and their codec.

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/serde"
)

// windowKind says how records are assigned to windows.
type windowKind int

const (
	windowTumbling windowKind = iota + 1
	windowHopping
	windowSliding
	windowSession
)

func (k windowKind) String() string {
	switch k {
	case windowTumbling:
		return "tumbling"
	case windowHopping:
		return "hopping"
	case windowSliding:
		return "sliding"
	case windowSession:
		return "session"
	}
	return "no"
}

// Windows says how a windowed aggregation (WindowedBy) cuts time: the
// window kind, its size, and how long after a window ends late records
// are still accepted (the grace period). Create one with TumblingWindows,
// HoppingWindows, SlidingWindows or SessionWindows. Times are in
// milliseconds, as Kafka's timestamps are.
//
// A window closes when the stage's stream time (the largest record
// timestamp it has seen, bounded by the wall clock plus the allowed clock
// skew) moves beyond the last instant a record could still join it:
//
//   - tumbling and hopping: windows are [start, end), end excluded,
//     aligned to the Unix epoch (none starts before it, as in Kafka
//     Streams); closed once stream time >= end + grace;
//   - sliding: windows are [start, end], both included; closed once
//     stream time > end + grace;
//   - session: [start, end] spans the session's records; closed once
//     stream time > end + gap + grace.
//
// A record all of whose windows are closed is late: it is rejected with
// reason "late" to the rejected-records topic, never dropped silently. A
// record stamped beyond the wall clock plus the allowed skew is rejected
// with reason "future-timestamp". A
// record of a hopping window some of whose windows are still open updates
// those and is not rejected.
type Windows struct {
	kind      windowKind
	size      time.Duration // tumbling, hopping: window size; sliding: time difference; session: inactivity gap
	advance   time.Duration // hopping
	grace     time.Duration
	retention time.Duration // 0: the default
}

// TumblingWindows cuts time into windows of size, back to back:
// [0, size), [size, 2×size), ... A record belongs to exactly one.
func TumblingWindows(size time.Duration) Windows {
	return Windows{kind: windowTumbling, size: size, advance: size}
}

// HoppingWindows cuts time into windows of size that start every advance
// (advance <= size): a record belongs to size/advance windows.
func HoppingWindows(size, advance time.Duration) Windows {
	return Windows{kind: windowHopping, size: size, advance: advance}
}

// SlidingWindows are Kafka Streams' sliding windows (KIP-450): windows of
// timeDifference (both ends included) defined by the records themselves.
// Each record at t has a window [t - timeDifference, t] ending at it, and,
// when a record follows within timeDifference, a window
// [t + 1ms, t + 1ms + timeDifference] starting just after it; windows are
// never empty. A window's aggregate folds its records in timestamp order.
func SlidingWindows(timeDifference time.Duration) Windows {
	return Windows{kind: windowSliding, size: timeDifference}
}

// SessionWindows group a key's records into sessions: records
// gap apart or less (by timestamp) are in one session, and a record that bridges
// two sessions merges them. A session [start, end] spans its first and
// last record, both included.
func SessionWindows(gap time.Duration) Windows {
	return Windows{kind: windowSession, size: gap}
}

// WithGrace accepts records up to grace after a window ends (default 0:
// a record is late once stream time passes its window's end).
func (w Windows) WithGrace(grace time.Duration) Windows {
	w.grace = grace
	return w
}

// WithRetention keeps a window's state for retention after its start
// (time and sliding windows) or after its end (sessions), instead of
// deleting it when the window closes. It must be at least size + grace
// (sessions: gap + grace), the default. Kept state costs disk and
// changelog space; onceflow itself never reads a closed window again.
func (w Windows) WithRetention(retention time.Duration) Windows {
	w.retention = retention
	return w
}

// String describes the windows, for Describe.
func (w Windows) String() string {
	switch w.kind {
	case windowHopping:
		return fmt.Sprintf("hopping %v every %v, grace %v", w.size, w.advance, w.grace)
	case windowSliding:
		return fmt.Sprintf("sliding %v, grace %v", w.size, w.grace)
	case windowSession:
		return fmt.Sprintf("session gap %v, grace %v", w.size, w.grace)
	}
	return fmt.Sprintf("tumbling %v, grace %v", w.size, w.grace)
}

// check returns what is wrong with w, or nil.
func (w Windows) check() error {
	ms := time.Millisecond
	switch {
	case w.kind == 0:
		return fmt.Errorf("no windows given (use TumblingWindows, HoppingWindows, SlidingWindows or SessionWindows)")
	case w.size < ms || w.size%ms != 0:
		return fmt.Errorf("%v windows: size %v must be a positive number of milliseconds", w.kind, w.size)
	case w.kind == windowHopping && (w.advance < ms || w.advance%ms != 0 || w.advance > w.size):
		return fmt.Errorf("hopping windows: advance %v must be a positive number of milliseconds no larger than the size %v", w.advance, w.size)
	case w.grace < 0 || w.grace%ms != 0:
		return fmt.Errorf("%v windows: grace %v must be zero or a positive number of milliseconds", w.kind, w.grace)
	case w.retention != 0 && w.retention < w.size+w.grace:
		return fmt.Errorf("%v windows: retention %v is shorter than size (or gap) + grace, %v", w.kind, w.retention, w.size+w.grace)
	}
	return nil
}

// Windowed is the key of a windowed aggregate: the record key and its
// window. End is excluded for tumbling and hopping windows and included
// for sliding and session windows (see Windows).
type Windowed[K any] struct {
	Key   K
	Start time.Time
	End   time.Time
}

// String shows the key and its window, for logs and tests.
func (w Windowed[K]) String() string {
	return fmt.Sprintf("%v@[%s,%s]", w.Key, w.Start.UTC().Format(time.RFC3339Nano), w.End.UTC().Format(time.RFC3339Nano))
}

// WindowedCodec encodes a windowed key as the key's bytes (kc) followed
// by the window's start and end, each 8 bytes: milliseconds since the
// Unix epoch, big-endian two's complement (Kafka's LongSerializer). A
// reader of a windowed aggregate's output decodes its keys with it; a
// reader in another language takes the last 16 bytes as the window.
func WindowedCodec[K any](kc serde.Codec[K]) serde.Codec[Windowed[K]] {
	return windowedCodec[K]{kc: kc}
}

type windowedCodec[K any] struct{ kc serde.Codec[K] }

func (c windowedCodec[K]) Name() string { return "windowed(" + c.kc.Name() + ")" }

func (c windowedCodec[K]) Encode(w Windowed[K]) ([]byte, error) {
	kb, err := c.kc.Encode(w.Key)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(kb)+16)
	b = append(b, kb...)
	b = binary.BigEndian.AppendUint64(b, uint64(w.Start.UnixMilli()))
	return binary.BigEndian.AppendUint64(b, uint64(w.End.UnixMilli())), nil
}

func (c windowedCodec[K]) Decode(b []byte) (Windowed[K], error) {
	if len(b) < 16 {
		return Windowed[K]{}, fmt.Errorf("topology: windowed key has %d bytes, want at least 16", len(b))
	}
	n := len(b) - 16
	var kb []byte
	if n > 0 {
		kb = b[:n]
	} else {
		kb = []byte{}
	}
	k, err := c.kc.Decode(kb)
	if err != nil {
		return Windowed[K]{}, err
	}
	return Windowed[K]{
		Key:   k,
		Start: time.UnixMilli(int64(binary.BigEndian.Uint64(b[n:]))),
		End:   time.UnixMilli(int64(binary.BigEndian.Uint64(b[n+8:]))),
	}, nil
}
