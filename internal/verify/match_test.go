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

func TestParseSource(t *testing.T) {
	for _, tc := range []struct {
		in    string
		topic string
		p     int32
		o     int64
		ok    bool
	}{
		{"events/3/1207", "events", 3, 1207, true},
		{"a.b-c_d/0/0", "a.b-c_d", 0, 0, true},
		{"events/3/", "", 0, 0, false},
		{"events//1", "", 0, 0, false},
		{"/3/1", "", 0, 0, false},
		{"events/2147483648/1", "", 0, 0, false},
		{"events/3/1 ", "", 0, 0, false},
		{"", "", 0, 0, false},
	} {
		topic, p, o, ok := ParseSource(tc.in)
		if ok != tc.ok || topic != tc.topic || p != tc.p || o != tc.o {
			t.Errorf("ParseSource(%q) = %q %d %d %v, want %q %d %d %v", tc.in, topic, p, o, ok, tc.topic, tc.p, tc.o, tc.ok)
		}
	}
}

func FuzzParseSource(f *testing.F) {
	for _, s := range []string{"events/3/1207", "a/b/c/1/2", "//", "x/-1/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		topic, p, o, ok := ParseSource(s)
		if !ok {
			return
		}
		if topic == "" || p < 0 || o < 0 {
			t.Fatalf("ParseSource(%q) accepted %q %d %d", s, topic, p, o)
		}
		t2, p2, o2, ok2 := ParseSource(FormatSource(topic, p, o))
		if !ok2 || t2 != topic || p2 != p || o2 != o {
			t.Fatalf("round trip of %q failed", s)
		}
	})
}
