package benchmarks

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th quantile (0 < p ≤ 1) of samples by the
// nearest-rank method: the smallest sample with at least p of all samples at
// or below it. It sorts samples in place. No samples: 0.
func Percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	if !slices.IsSorted(samples) {
		slices.Sort(samples)
	}
	rank := int(math.Ceil(p * float64(len(samples))))
	rank = min(max(rank, 1), len(samples))
	return samples[rank-1]
}

// Median returns the median of xs (the mean of the middle two for an even
// count). It does not modify xs. No values: 0.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Ratio returns a/b, or 0 when either is not a positive number (a missing
// or failed measurement has no ratio).
func Ratio(a, b float64) float64 {
	if !(a > 0) || !(b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return 0
	}
	return a / b
}

// Bucket is one cumulative histogram bucket: Count observations were at or
// below UpperBound.
type Bucket struct {
	UpperBound float64
	Count      uint64
}

// HistogramQuantile estimates the q-th quantile (0 ≤ q ≤ 1) of a cumulative
// histogram the way Prometheus' histogram_quantile does: find the bucket
// that holds the rank, then interpolate linearly inside it (the first
// bucket's lower bound is 0). A rank in the +Inf bucket returns the largest
// finite bound. Buckets must be sorted by UpperBound. No observations: 0.
func HistogramQuantile(q float64, buckets []Bucket) float64 {
	if len(buckets) == 0 {
		return 0
	}
	total := buckets[len(buckets)-1].Count
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	lower, below := 0.0, uint64(0)
	for _, b := range buckets {
		if float64(b.Count) >= rank && b.Count > below {
			if math.IsInf(b.UpperBound, 1) {
				return lower
			}
			return lower + (b.UpperBound-lower)*(rank-float64(below))/float64(b.Count-below)
		}
		if !math.IsInf(b.UpperBound, 1) {
			lower = b.UpperBound
		}
		below = b.Count
	}
	return lower
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
