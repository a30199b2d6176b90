package verify

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/examples/pageviews"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/wire"
)

// PageviewsReport is the outcome of checking the pageviews example's
// final counts against the truth of its input (gen.PageviewsTruth).
type PageviewsReport struct {
	// Windows is the number of distinct user-hour windows in the output
	// (the flush records' own excluded); Expected the truth's.
	Windows  int `json:"windows"`
	Expected int `json:"expected"`
	// Missing windows are in the truth, not in the output; Extra ones the
	// other way round; Wrong ones have another count; Duplicated ones were
	// written more than once (a final result must come once).
	Missing    int `json:"missing"`
	Extra      int `json:"extra"`
	Wrong      int `json:"wrong"`
	Duplicated int `json:"duplicated"`
	// Undecodable output records.
	Undecodable int `json:"undecodable"`
	// Late is the number of records rejected with reason late;
	// ExpectedLate the truth's.
	Late         int `json:"late"`
	ExpectedLate int `json:"expected_late"`
	// OtherRejected counts rejected records with another reason.
	OtherRejected int      `json:"other_rejected"`
	Examples      []string `json:"examples,omitempty"`
	OK            bool     `json:"ok"`
}

func (r PageviewsReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "windows %d (truth %d): missing %d, extra %d, wrong count %d, written more than once %d, undecodable %d\n",
		r.Windows, r.Expected, r.Missing, r.Extra, r.Wrong, r.Duplicated, r.Undecodable)
	fmt.Fprintf(&b, "late %d (truth %d), other rejections %d\n", r.Late, r.ExpectedLate, r.OtherRejected)
	for _, e := range r.Examples {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	if r.OK {
		b.WriteString("OK: every window's final count once, equal to the truth; every late record rejected")
	} else {
		b.WriteString("FAILED")
	}
	return b.String()
}

// CheckPageviews reads output and rejected read_committed and matches
// them with truth.
func CheckPageviews(ctx context.Context, brokers []string, truth gen.PageviewsTruth, output, rejected string, extra ...kgo.Opt) (PageviewsReport, error) {
	var out, rej []Record
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { out, err = ReadAll(gctx, brokers, output, extra...); return err })
	g.Go(func() (err error) { rej, err = ReadAll(gctx, brokers, rejected, extra...); return err })
	if err := g.Wait(); err != nil {
		return PageviewsReport{}, err
	}
	return MatchPageviews(truth, out, rej), nil
}

// MatchPageviews matches output and rejected records with truth.
func MatchPageviews(truth gen.PageviewsTruth, out, rejected []Record) PageviewsReport {
	r := PageviewsReport{Expected: len(truth.Windows), ExpectedLate: truth.Late}
	example := func(format string, args ...any) {
		if len(r.Examples) < maxExamples {
			r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
		}
	}
	kc := pageviews.KeyCodec()
	got := map[string]int64{}
	seen := map[string]int{}
	for _, rec := range out {
		w, err := kc.Decode(rec.Key)
		if err != nil || len(rec.Value) != 8 {
			r.Undecodable++
			continue
		}
		if slices.Contains(truth.Flush, w.Key) {
			continue
		}
		k := gen.WindowKey(w.Key, w.Start)
		seen[k]++
		got[k] = int64(binary.BigEndian.Uint64(rec.Value))
	}
	r.Windows = len(got)
	for k, n := range seen {
		if n > 1 {
			r.Duplicated++
			example("%s written %d times", k, n)
		}
		if _, ok := truth.Windows[k]; !ok {
			r.Extra++
			example("%s not in the truth", k)
		}
	}
	for k, want := range truth.Windows {
		n, ok := got[k]
		switch {
		case !ok:
			r.Missing++
			example("%s missing (truth %d)", k, want)
		case n != want:
			r.Wrong++
			example("%s count %d, truth %d", k, n, want)
		}
	}
	for _, rec := range rejected {
		if rec.Headers[wire.HeaderRejectReason] == wire.ReasonLate {
			r.Late++
		} else {
			r.OtherRejected++
		}
	}
	r.OK = r.Missing == 0 && r.Extra == 0 && r.Wrong == 0 && r.Duplicated == 0 && r.Undecodable == 0 &&
		r.Late == r.ExpectedLate && r.OtherRejected == 0
	return r
}
