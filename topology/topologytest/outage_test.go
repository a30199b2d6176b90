package topologytest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

// downCodec fails every Decode and Encode as an outage, as a schema
// registry's codec does when the registry is out of reach.
type downCodec struct{}

var errDown = &serde.UnavailableError{Err: errors.New("registry down")}

func (downCodec) Name() string                  { return "down" }
func (downCodec) Decode([]byte) (string, error) { return "", errDown }
func (downCodec) Encode(string) ([]byte, error) { return nil, errDown }

// An outage in decoding or encoding is the pipe's error, as it fails a
// replica's transaction, and never a rejection.
func TestOutageIsAnErrorNotARejection(t *testing.T) {
	tp := topology.New("outage")
	topology.To(topology.Source(tp, "in", serde.String(), serde.Codec[string](downCodec{})), "out", serde.String(), serde.String())
	topology.To(topology.Source(tp, "in2", serde.String(), serde.String()), "out2", serde.String(), serde.Codec[string](downCodec{}))
	d := newDriver(t, tp, topologytest.Config{})
	if err := topologytest.Input(d, "in", serde.String(), serde.String()).PipeRaw([]byte("k"), []byte("v"), nil, time.Time{}, 0); !serde.IsUnavailable(err) {
		t.Errorf("decode outage: pipe returned %v, want the outage", err)
	}
	if err := topologytest.Input(d, "in2", serde.String(), serde.String()).Pipe("k", "v"); !serde.IsUnavailable(err) {
		t.Errorf("encode outage: pipe returned %v, want the outage", err)
	}
	if rej := d.Rejections(); len(rej) != 0 {
		t.Errorf("rejections %v, want none", rej)
	}
}
