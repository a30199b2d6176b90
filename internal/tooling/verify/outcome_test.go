package verify

import (
	"testing"

	"github.com/onceflow/onceflow/internal/wire"
)

// rec is a record of topic at partition p, offset o, with value v and
// headers given as key/value pairs.
func rec(topic string, p int32, o int64, v string, headers ...string) Record {
	r := Record{Topic: topic, Partition: p, Offset: o, Key: []byte("k"), Value: []byte(v)}
	if len(headers) > 0 {
		r.Headers = map[string]string{}
		for i := 0; i+1 < len(headers); i += 2 {
			r.Headers[headers[i]] = headers[i+1]
		}
	}
	return r
}

func TestMatchOutcomes(t *testing.T) {
	spec := Spec{Inputs: []string{"in"}, Outputs: []string{"out", "win"}, Windowed: []string{"win"}, Rejected: "app-rejected"}
	inputs := []Record{rec("in", 0, 0, "a"), rec("in", 0, 1, "b"), rec("in", 1, 0, "c")}
	// The outputs of a transformation: values unlike the inputs', one
	// input with two outputs, one rejected.
	outputs := []Record{
		rec("out", 0, 0, "total 1", wire.HeaderSource, "in/0/0"),
		rec("out", 0, 1, "total 2", wire.HeaderSource, "in/0/1"),
		rec("out", 1, 0, "another", wire.HeaderSource, "in/0/1"),
	}
	rejection := rec("app-rejected", 0, 0, "c", wire.HeaderSource, "in/1/0", wire.HeaderRejectReason, "duplicate", wire.HeaderRejectNode, "dedup")
	for _, tc := range []struct {
		name     string
		spec     Spec
		in, out  []Record
		rejected []Record
		check    func(OutcomeReport) bool
		wantOK   bool
	}{
		{
			name: "every input its outcome, values transformed", spec: spec,
			in: inputs, out: outputs, rejected: []Record{rejection},
			check: func(r OutcomeReport) bool {
				return r.WithOutput == 2 && r.RejectedOnly == 1 && r.Missing == 0 && r.Doubled == 0 && r.Unexpected == 0
			},
			wantOK: true,
		},
		{
			name: "an output written twice", spec: spec,
			in: inputs, out: append(outputs[:3:3], rec("out", 0, 7, "total 2", wire.HeaderSource, "in/0/1")), rejected: []Record{rejection},
			check:  func(r OutcomeReport) bool { return r.Doubled == 1 && r.Extra == 1 && r.Missing == 0 },
			wantOK: false,
		},
		{
			name: "a rejection written twice", spec: spec,
			in: inputs, out: outputs, rejected: []Record{rejection, rejection},
			check:  func(r OutcomeReport) bool { return r.Doubled == 1 && r.Extra == 1 },
			wantOK: false,
		},
		{
			name: "an output lost", spec: spec,
			in: inputs, out: outputs[1:], rejected: []Record{rejection},
			check:  func(r OutcomeReport) bool { return r.Missing == 1 && r.WithOutput == 1 && r.Doubled == 0 },
			wantOK: false,
		},
		{
			name: "a rejection lost", spec: spec,
			in: inputs, out: outputs,
			check:  func(r OutcomeReport) bool { return r.Missing == 1 && r.RejectedOnly == 0 },
			wantOK: false,
		},
		{
			name: "no outcome on a topic that may drop", spec: Spec{Inputs: spec.Inputs, Outputs: spec.Outputs, MayDrop: []string{"in"}},
			in: inputs, out: outputs,
			check:  func(r OutcomeReport) bool { return r.Missing == 0 && r.NoOutcome == 1 },
			wantOK: true,
		},
		{
			name: "an output naming no input, or none", spec: spec,
			in: inputs, out: append(outputs[:3:3], rec("out", 0, 9, "x", wire.HeaderSource, "in/5/5"), rec("out", 0, 10, "y"), rec("out", 0, 11, "z", wire.HeaderSource, "other/0/0")),
			rejected: []Record{rejection},
			check:    func(r OutcomeReport) bool { return r.Unexpected == 3 && r.Topics[0].Unexpected == 3 },
			wantOK:   false,
		},
		{
			name: "windowed and punctuated outputs apart", spec: spec,
			in: inputs,
			out: append(outputs[:3:3],
				rec("win", 0, 0, "3", wire.HeaderSource, "in/0/0"),
				rec("out", 0, 4, "tick", wire.HeaderSource, "punctuator/ticks/0_1"),
				rec("out", 0, 5, "tick", wire.HeaderSource, "punctuator/ticks/0_1")),
			rejected: []Record{rejection, rec("app-rejected", 0, 1, "w", wire.HeaderSource, "in/0/0", wire.HeaderRejectedRecord, "window-result")},
			check: func(r OutcomeReport) bool {
				return r.Windowed == 2 && r.Punctuated == 2 && r.WithOutput == 2 && r.Doubled == 0 && r.Unexpected == 0 &&
					r.Topics[0].Topic == "out" && r.Topics[0].Punctuated == 2 && r.Topics[1].Topic == "win" && r.Topics[1].Windowed == 1
			},
			wantOK: true,
		},
		{
			name: "a window's result written twice", spec: spec,
			in: inputs,
			out: append(outputs[:3:3],
				rec("win", 0, 0, "3", wire.HeaderSource, "in/0/0"),
				rec("win", 0, 1, "3", wire.HeaderSource, "in/0/0")),
			rejected: []Record{rejection},
			check:    func(r OutcomeReport) bool { return r.Windowed == 2 && r.WindowedDoubled == 1 && r.Doubled == 0 },
			wantOK:   false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := MatchOutcomes(tc.spec, tc.in, tc.out, tc.rejected)
			if !tc.check(r) || r.OK != tc.wantOK {
				t.Errorf("%+v\n%s", r, r)
			}
		})
	}
}

// Two deliveries to one sink from one input are two outcomes, told apart
// by their idempotency keys; the same delivery twice is a double.
func TestMatchOutcomesOutboxKeys(t *testing.T) {
	spec := Spec{Inputs: []string{"in"}, Outputs: []string{"app-sink-hook"}}
	in := []Record{rec("in", 0, 0, "a")}
	first := rec("app-sink-hook", 0, 0, "p", wire.HeaderSource, "in/0/0", wire.HeaderIdempotencyKey, "hook:in/0/0")
	second := rec("app-sink-hook", 0, 1, "p", wire.HeaderSource, "in/0/0", wire.HeaderIdempotencyKey, "hook:in/0/0#1")
	if r := MatchOutcomes(spec, in, []Record{first, second}, nil); !r.OK || r.WithOutput != 1 {
		t.Errorf("two deliveries: %s", r)
	}
	if r := MatchOutcomes(spec, in, []Record{first, second, first}, nil); r.OK || r.Doubled != 1 {
		t.Errorf("a delivery twice: %s", r)
	}
}
