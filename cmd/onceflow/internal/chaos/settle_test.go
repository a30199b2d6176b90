package chaos

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// A key is commanded again only once the runners' group has read past
// its last command; a parked delivery the run never commanded is named.
func TestCommandDueAndUncommanded(t *testing.T) {
	r := &runner{commanded: map[string]sinkadmin.Command{
		"hook:a": {Key: "hook:a", Outbox: "app-sink-hook", Partition: 2, Offset: 5},
		"hook:b": {Key: "hook:b", Outbox: "app-sink-hook", Partition: 3, Offset: 9},
	}}
	read := func(p int32, at int64) kadm.OffsetResponses {
		rs := kadm.OffsetResponses{}
		rs.Add(kadm.OffsetResponse{Offset: kadm.Offset{Topic: "app-sink-hook", Partition: p, At: at}})
		return rs
	}
	for _, tc := range []struct {
		name string
		key  string
		read kadm.OffsetResponses
		due  bool
	}{
		{"never commanded", "hook:c", nil, true},
		{"offsets unknown", "hook:a", nil, false},
		{"command not read yet", "hook:a", read(2, 5), false},
		{"command read: parked again", "hook:a", read(2, 6), true},
		{"another partition read", "hook:b", read(2, 100), false},
	} {
		if got := r.commandDue(tc.key, tc.read); got != tc.due {
			t.Errorf("%s: due %t, want %t", tc.name, got, tc.due)
		}
	}
	parked := []verify.Effect{{Key: "hook:a"}, {Key: "hook:c"}, {Key: "hook:d"}}
	if got := r.uncommanded(parked); !slices.Equal(got, []string{"hook:c", "hook:d"}) {
		t.Errorf("uncommanded %v, want [hook:c hook:d]", got)
	}
}
