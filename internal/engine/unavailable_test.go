package engine_test

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// outageCodec is a string codec whose Decode and Encode of one value fail
// as an outage (serde.UnavailableError, as a schema registry's codec does
// when the registry is out of reach) the given number of times (-1:
// always), then succeed.
type outageCodec struct {
	value                    string
	decodeFails, encodeFails atomic.Int64
}

var errRegistryDown = errors.New("registry answered 503: backend unavailable")

func (c *outageCodec) Name() string { return "outage" }

func (c *outageCodec) Decode(b []byte) (string, error) {
	if string(b) == c.value && c.decodeFails.Load() != 0 {
		c.decodeFails.Add(-1)
		return "", &serde.UnavailableError{Err: errRegistryDown}
	}
	return string(b), nil
}

func (c *outageCodec) Encode(v string) ([]byte, error) {
	if v == c.value+"!" && c.encodeFails.Load() != 0 {
		c.encodeFails.Add(-1)
		return nil, &serde.UnavailableError{Err: errRegistryDown}
	}
	return []byte(v), nil
}

// A codec outage in decoding an input or encoding an output rejects
// nothing: the transaction aborts, the input is read again, and once the
// codec works every record has its output, once.
func TestCodecOutageIsRetriedNotRejected(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	dec := &outageCodec{value: "b"}
	dec.decodeFails.Store(2)
	enc := &outageCodec{value: "c"}
	enc.encodeFails.Store(2)
	tp := topology.New("outage")
	src := topology.Source(tp, in, serde.String(), serde.Codec[string](dec))
	shout := topology.Map(src, func(k, v string) (string, string, error) { return k, v + "!", nil })
	topology.To(shout, out, serde.String(), serde.Codec[string](enc))
	for _, v := range []string{"a", "b", "c"} {
		env.ProduceRaw(in, []byte(v), []byte(v))
	}

	r := env.Start(env.Config(app, "r1"), compile(t, tp))
	env.WaitCount(out, 3, 30*time.Second)
	r.Stop()

	var got []string
	for _, rec := range env.Read(out) {
		got = append(got, string(rec.Value))
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a!", "b!", "c!"}) {
		t.Errorf("output %q, want a!, b!, c! once each", got)
	}
	s := r.E.Stats()
	t.Logf("aborted %d, committed %d, rejected %d", s.Aborted, s.Committed, s.Rejected)
	if s.Rejected != 0 || s.Aborted < 4 {
		t.Errorf("stats %+v: want no rejection and at least 4 aborts", s)
	}
	if dec.decodeFails.Load() != 0 || enc.encodeFails.Load() != 0 {
		t.Errorf("outages left unconsumed: decode %d, encode %d", dec.decodeFails.Load(), enc.encodeFails.Load())
	}
}

// An outage that lasts stops the replica with ErrRepeatedFailure naming
// the outage, and rejects nothing.
func TestLastingCodecOutageStopsTheReplica(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	dec := &outageCodec{value: "a"}
	dec.decodeFails.Store(-1)
	tp := topology.New("outage")
	topology.To(topology.Source(tp, in, serde.String(), serde.Codec[string](dec)), out, serde.String(), serde.String())
	env.ProduceRaw(in, []byte("a"), []byte("a"))

	r := env.Start(env.Config(app, "r1"), compile(t, tp))
	err, ok := r.Wait(60 * time.Second)
	if !ok {
		t.Fatalf("the replica still runs after 60s of a codec outage (%+v)", r.E.Stats())
	}
	if !errors.Is(err, engine.ErrRepeatedFailure) || !strings.Contains(err.Error(), "at codec: value: registry answered 503") {
		t.Fatalf("run returned %v, want ErrRepeatedFailure naming the outage", err)
	}
	if s := r.E.Stats(); s.Rejected != 0 || s.Committed != 0 {
		t.Errorf("stats %+v: want no rejection and no commit", s)
	}
}
