package benchmarks

import (
	"math"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted
	}
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of odd", ms(3, 1, 2), 0.5, 2 * time.Millisecond},
		{"median of even is the lower middle", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p99 of 100", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"p50 of 100", ms(hundred...), 0.50, 50 * time.Millisecond},
		{"max", ms(hundred...), 1, 100 * time.Millisecond},
		{"tiny p is the minimum", ms(5, 9), 0.0001, 5 * time.Millisecond},
		{"p999 of 10 is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.999, 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.samples, tc.p); got != tc.want {
				t.Errorf("Percentile(%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func TestMedianAndRatio(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		xs := append([]float64(nil), tc.xs...)
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
		for i := range xs {
			if xs[i] != tc.xs[i] {
				t.Errorf("Median modified its input: %v", tc.xs)
			}
		}
	}
	for _, tc := range []struct {
		a, b, want float64
	}{
		{90, 100, 0.9},
		{150, 100, 1.5},
		{0, 100, 0},
		{100, 0, 0},
		{-1, 100, 0},
		{math.NaN(), 1, 0},
		{math.Inf(1), 1, 0},
	} {
		if got := Ratio(tc.a, tc.b); got != tc.want {
			t.Errorf("Ratio(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	// 10 observations at or below 1, 10 more up to 2, 80 more up to 4.
	bs := []Bucket{{1, 10}, {2, 20}, {4, 100}, {inf, 100}}
	for _, tc := range []struct {
		name    string
		q       float64
		buckets []Bucket
		want    float64
	}{
		{"empty", 0.5, nil, 0},
		{"no observations", 0.5, []Bucket{{1, 0}, {inf, 0}}, 0},
		{"inside the first bucket, from 0", 0.05, bs, 0.5},
		{"bucket edge", 0.10, bs, 1},
		{"second bucket", 0.15, bs, 1.5},
		{"third bucket", 0.60, bs, 3},
		{"p99", 0.99, bs, 2 + 2*(99.0-20)/80},
		{"rank in +Inf: the largest finite bound", 0.99, []Bucket{{1, 10}, {inf, 100}}, 1},
		{"skips empty buckets", 0.5, []Bucket{{1, 0}, {2, 0}, {4, 10}, {inf, 10}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HistogramQuantile(tc.q, tc.buckets); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("HistogramQuantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

func TestThroughputWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	started := sample{at: at(-2000)}
	step := func(ms int, c int64) sample { return sample{at: at(ms), committed: c} }
	for _, tc := range []struct {
		name      string
		steps     []sample
		total     int64
		wantStart time.Time
		wantStop  time.Time
		fromStart bool
	}{
		{"regular commits: the remainder's commit is left out",
			[]sample{step(0, 100), step(100, 200), step(200, 300), step(350, 320)}, 320, at(0), at(200), false},
		{"two commits: first to last",
			[]sample{step(0, 100), step(500, 1000)}, 1000, at(0), at(500), false},
		{"left-out remainder too big: first to last",
			[]sample{step(0, 10), step(10, 20), step(900, 1000)}, 1000, at(0), at(900), false},
		{"one commit: from the start",
			[]sample{step(0, 1000)}, 1000, at(-2000), at(0), true},
		{"too little after the first commit: from the start",
			[]sample{step(0, 950), step(100, 1000)}, 1000, at(-2000), at(100), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, stop, fromStart := throughputWindow(tc.steps, started, tc.total)
			if !start.at.Equal(tc.wantStart) || !stop.at.Equal(tc.wantStop) || fromStart != tc.fromStart {
				t.Errorf("window %v..%v (from start %v), want %v..%v (%v)",
					start.at.Sub(t0), stop.at.Sub(t0), fromStart, tc.wantStart.Sub(t0), tc.wantStop.Sub(t0), tc.fromStart)
			}
		})
	}
}
