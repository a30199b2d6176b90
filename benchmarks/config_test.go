package benchmarks

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestExpand(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name      string
		workloads []string
		intervals []time.Duration
		sizes     []int
		want      []string
	}{
		{"one point", []string{"copy"}, []time.Duration{100 * ms}, []int{100}, []string{"copy 100ms 100B"}},
		{"the full sweep for copy", []string{"copy"}, []time.Duration{10 * ms, 100 * ms, time.Second}, []int{100, 1000},
			[]string{"copy 10ms 100B", "copy 10ms 1000B", "copy 100ms 100B", "copy 100ms 1000B", "copy 1s 100B", "copy 1s 1000B"}},
		{"orders values are not sized", []string{"orders"}, []time.Duration{10 * ms, 100 * ms}, []int{100, 1000},
			[]string{"orders 10ms", "orders 100ms"}},
		{"both workloads, in the order given", []string{"orders", "copy"}, []time.Duration{100 * ms}, []int{100, 1000},
			[]string{"orders 100ms", "copy 100ms 100B", "copy 100ms 1000B"}},
		{"repeats are dropped", []string{"copy", "copy"}, []time.Duration{100 * ms, 100 * ms}, []int{100, 100}, []string{"copy 100ms 100B"}},
		{"nothing to sweep", nil, []time.Duration{100 * ms}, []int{100}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range Expand(tc.workloads, tc.intervals, tc.sizes) {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Expand = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	err := Config{Workloads: []string{"copy", "nope"}, Records: -1, Replicas: 99, CommitIntervals: []time.Duration{0}, ValueSizes: []int{-5}, Warmup: -3}.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{`unknown workload "nope"`, "records -1", "replicas 99", "commit interval 0s", "value size -5", "warm-up records -3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	err = Config{Threads: 99, ColdRecords: DefaultRecords}.Validate()
	for _, want := range []string{"threads 99", "cold records 100000"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
	if err := (Config{Records: 1000, ColdRecords: 999, Threads: 2}).Validate(); err != nil {
		t.Errorf("cold records below the records refused: %v", err)
	}
	d := Config{}.withDefaults()
	if d.Records != DefaultRecords || d.Partitions != 6 || d.Replicas != 1 || d.Threads != 1 || d.Repeats != 3 ||
		!slices.Equal(d.CommitIntervals, []time.Duration{100 * time.Millisecond}) || !slices.Equal(d.Workloads, []string{"copy"}) {
		t.Errorf("defaults: %+v", d)
	}
}
