package verify

import (
	"strings"
	"testing"

	"github.com/onceflow/onceflow/internal/wire"
)

func in(p int32, o int64, v string) Record {
	return Record{Topic: "in", Partition: p, Offset: o, Value: []byte(v)}
}

func out(src, v string) Record {
	r := Record{Topic: "out", Value: []byte(v)}
	if src != "" {
		r.Headers = map[string]string{wire.HeaderSource: src}
	}
	return r
}

func TestMatch(t *testing.T) {
	inputs := []Record{in(0, 0, "a"), in(0, 1, "b"), in(1, 0, "c")}
	for _, tc := range []struct {
		name string
		in   []Record
		out  []Record
		want Report
	}{
		{
			name: "empty",
			want: Report{OK: true},
		},
		{
			name: "exact copy",
			in:   inputs,
			out:  []Record{out("in/1/0", "c"), out("in/0/0", "a"), out("in/0/1", "b")},
			want: Report{Input: 3, Output: 3, OK: true},
		},
		{
			name: "nothing out",
			in:   inputs,
			want: Report{Input: 3, Missing: 3},
		},
		{
			name: "one missing",
			in:   inputs,
			out:  []Record{out("in/0/0", "a"), out("in/1/0", "c")},
			want: Report{Input: 3, Output: 2, Missing: 1},
		},
		{
			name: "three copies count two duplicates",
			in:   inputs,
			out:  []Record{out("in/0/0", "a"), out("in/0/0", "a"), out("in/0/0", "a"), out("in/0/1", "b"), out("in/1/0", "c"), out("in/1/0", "c")},
			want: Report{Input: 3, Output: 6, Duplicates: 3},
		},
		{
			name: "no header",
			in:   inputs[:1],
			out:  []Record{out("in/0/0", "a"), out("", "a")},
			want: Report{Input: 1, Output: 2, Unexpected: 1},
		},
		{
			name: "malformed headers",
			in:   inputs[:1],
			out: []Record{
				out("in/0/0", "a"), out("garbage", "a"), out("in/0", "a"), out("in/x/0", "a"),
				out("in/0/-1", "a"), out("/0/0", "a"), out("in/0/0/", "a"), out("in/+0/0", "a"),
			},
			want: Report{Input: 1, Output: 8, Unexpected: 7},
		},
		{
			name: "points at another topic",
			in:   inputs[:1],
			out:  []Record{out("other/0/0", "a")},
			want: Report{Input: 1, Output: 1, Missing: 1, Unexpected: 1},
		},
		{
			name: "points past the input",
			in:   inputs[:1],
			out:  []Record{out("in/0/0", "a"), out("in/0/9", "a"), out("in/7/0", "a")},
			want: Report{Input: 1, Output: 3, Unexpected: 2},
		},
		{
			name: "value differs: unexpected, and the input stays missing",
			in:   inputs[:1],
			out:  []Record{out("in/0/0", "A")},
			want: Report{Input: 1, Output: 1, Missing: 1, Unexpected: 1},
		},
		{
			name: "empty values match",
			in:   []Record{in(2, 5, "")},
			out:  []Record{{Topic: "out", Headers: map[string]string{wire.HeaderSource: "in/2/5"}}},
			want: Report{Input: 1, Output: 1, OK: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Match("in", tc.in, tc.out); got != tc.want {
				t.Errorf("Match = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReportString(t *testing.T) {
	ok := Report{Input: 3, Output: 3, OK: true}.String()
	bad := Report{Input: 3, Output: 4, Missing: 1, Duplicates: 2}.String()
	if !strings.Contains(ok, "input 3, output 3") || !strings.Contains(ok, "ok") {
		t.Errorf("ok report: %q", ok)
	}
	if !strings.Contains(bad, "missing 1, duplicates 2, unexpected 0") || !strings.Contains(bad, "FAILED") {
		t.Errorf("failed report: %q", bad)
	}
}
