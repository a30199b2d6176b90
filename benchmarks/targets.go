package benchmarks

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The steps of a full run (scripts/bench-full.sh), each a directory of the
// run's directory holding command.txt and output.txt, and results.json for
// the `onceflow bench` steps.
const (
	StepOrders300k        = "orders-300k"          // eos, alos, kstreams_eos, kstreams_alos; latency at 2,000/s
	StepOrders300kHalfMax = "orders-300k-half-max" // latency at half the exactly-once maximum
	StepOrders3M          = "orders-3m"            // eos, alos, kstreams_eos; throughput only
	StepOrders300kThreads = "orders-300k-threads2" // eos, kstreams_eos, two threads each; throughput only
	StepOrders3MThreads   = "orders-3m-threads2"   // the same at 3,000,000 events
	StepCopy              = "copy"                 // 100 B and 1 KB, every variant; latency at 20,000/s
	StepCopyHalfMax       = "copy-half-max"        // 100 B, latency at half the exactly-once maximum
	StepScale             = "scale-r"              // + 1, 2, 3: orders eos on 12 partitions
	StepRestore           = "restore"              // onceflow scenario orders: SIGKILLs and a cold restore
)

// Statuses of a Target.
const (
	Met      = "met"
	NotMet   = "not met"
	Reported = "reported" // a figure the goals ask to see, with no bound
	NoData   = "no data"  // its step failed or did not run
)

// Target is one performance goal with what a full run measured for it.
type Target struct {
	Name     string // the goal
	Measured string // the figures it is computed from
	Value    string // the ratio or figure compared with Want
	Want     string // the bound ("≥ 2.00", "≤ 130 ms"); "" when reported only
	Status   string // Met, NotMet, Reported or NoData
}

// The bounds of the goals.
const (
	wantOrdersOverKStreams = 2.0
	// onceflow EOS's CPU per event over Kafka Streams EOS's steady state at
	// 3,000,000 events: process + broker, and the process alone.
	wantCPUTotalOverKStreams   = 0.75
	wantCPUProcessOverKStreams = 0.50
	wantEOSOverALOSOrders      = 0.90
	wantCPUGrowthPct           = 25.0
	wantEOSOverALOSCopy        = 0.95
	wantEOSOverSarama          = 1.0
	wantRestorePerSec          = 250_000.0
	wantKillToReadySec         = 2.0
)

// fullRun is what EvaluateTargets reads from a full run's directory.
type fullRun struct {
	dir     string
	reports map[string]*Report // by step; absent: no results.json
	restore *restoreFigures
}

// EvaluateTargets reads the steps of a full run in dir and computes every
// target: each figure and each met or not met comes from the results, none
// is written by hand. A step that is absent or failed gives NoData rows.
func EvaluateTargets(dir string) ([]Target, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("bench: targets: %s is not a directory", dir)
	}
	r := &fullRun{dir: dir, reports: map[string]*Report{}}
	steps := []string{StepOrders300k, StepOrders300kHalfMax, StepOrders3M, StepOrders300kThreads, StepOrders3MThreads, StepCopy, StepCopyHalfMax}
	for i := 1; i <= 3; i++ {
		steps = append(steps, StepScale+strconv.Itoa(i))
	}
	for _, s := range steps {
		rep, err := readReport(filepath.Join(dir, s, "results.json"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		r.reports[s] = rep
	}
	if f, err := os.Open(filepath.Join(dir, StepRestore, "output.txt")); err == nil {
		r.restore, err = parseRestore(f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	var ts []Target
	ts = append(ts, r.ordersTargets()...)
	ts = append(ts, r.copyTargets()...)
	ts = append(ts, r.latencyTargets()...)
	ts = append(ts, r.restoreTargets()...)
	ts = append(ts, r.scaleTargets()...)
	return ts, nil
}

func readReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("bench: targets: %s: %w", path, err)
	}
	return &rep, nil
}

// point finds the 100 ms point of workload (of that value size, if > 0)
// in step.
func (r *fullRun) point(step, workload string, valueSize int) *Result {
	rep := r.reports[step]
	if rep == nil {
		return nil
	}
	for i := range rep.Sweep {
		p := &rep.Sweep[i]
		if p.Workload == workload && p.CommitIntervalMs == 100 && (valueSize == 0 || p.ValueSize == valueSize) {
			return p
		}
	}
	return nil
}

// variant is a variant's result at p when it has a throughput figure and
// a passed check, or nil and why not.
func variant(p *Result, name string) (*VariantResult, string) {
	if p == nil {
		return nil, "the step did not run or failed"
	}
	_, all := p.variants()
	v := all[name]
	switch {
	case v == nil:
		if why, ok := p.PeersSkipped[name]; ok {
			return nil, name + " skipped: " + why
		}
		return nil, name + " did not run"
	case v.Check != "ok":
		return nil, name + " check: " + v.Check
	case v.RecordsPerSec <= 0:
		msg := name + " has no throughput figure"
		if len(v.Errors) > 0 {
			msg += ": " + v.Errors[0]
		}
		return nil, msg
	}
	return v, ""
}

// reasons joins the non-empty reasons.
func reasons(rs ...string) string {
	var out []string
	for _, r := range rs {
		if r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return strings.Join(out, "; ")
}

func noData(name, why string) Target {
	return Target{Name: name, Measured: why, Value: "–", Status: NoData}
}

// atLeast is a ratio target: a / b ≥ want.
func atLeast(name, measured string, ratio, want float64) Target {
	t := Target{Name: name, Measured: measured, Value: fmt.Sprintf("%.3f", ratio), Want: fmt.Sprintf("≥ %.2f", want), Status: NotMet}
	if ratio >= want {
		t.Status = Met
	}
	return t
}

// withSpread is a median with its min–max over the runs, when it has one.
func withSpread(format string, median float64, v *VariantResult, name string) string {
	s := fmt.Sprintf(format, median)
	if sp, ok := v.Spread[name]; ok && sp.Runs > 1 {
		s += fmt.Sprintf(" ("+format+"–"+format+")", sp.Min, sp.Max)
	}
	return s
}

// cpuText is a variant's CPU per million records, the primary figure:
// process + broker when the broker's is known, then the process's alone,
// each with its spread.
func cpuText(v *VariantResult) string {
	var s string
	if total := totalCPU(v); total > 0 && v.BrokerCPUSecPerMillion > 0 {
		s = "CPU " + withSpread("%.1f", total, v, "total_cpu_sec_per_million") + " s per M process + broker, process " +
			withSpread("%.1f", v.CPUSecPerMillion, v, "cpu_sec_per_million") + " + broker " +
			withSpread("%.1f", v.BrokerCPUSecPerMillion, v, "broker_cpu_sec_per_million")
	} else {
		s = "CPU " + withSpread("%.1f", v.CPUSecPerMillion, v, "cpu_sec_per_million") + " s per M"
	}
	if v.Cold != nil {
		s += fmt.Sprintf(" (steady; cold %.1f)", v.Cold.CPUSecPerMillion)
	}
	return s
}

// totalCPU is a variant's CPU per million records, process + broker; 0
// when the broker's was not measured (results of an older harness have
// the two apart only).
func totalCPU(v *VariantResult) float64 {
	switch {
	case v.TotalCPUSecPerMillion > 0:
		return v.TotalCPUSecPerMillion
	case v.BrokerCPUSecPerMillion > 0:
		return v.CPUSecPerMillion + v.BrokerCPUSecPerMillion
	}
	return 0
}

// rateText is a variant's throughput with its spread.
func rateText(v *VariantResult, unit string) string {
	return num(v.RecordsPerSec) + spreadNum(v, "records_per_sec") + " " + unit + "/s"
}

func spreadNum(v *VariantResult, name string) string {
	if sp, ok := v.Spread[name]; ok && sp.Runs > 1 {
		return " (" + num(sp.Min) + "–" + num(sp.Max) + ")"
	}
	return ""
}

// atMost is a ratio target: a / b ≤ want.
func atMost(name, measured string, ratio, want float64) Target {
	t := Target{Name: name, Measured: measured, Value: fmt.Sprintf("%.3f", ratio), Want: fmt.Sprintf("≤ %.2f", want), Status: NotMet}
	if ratio > 0 && ratio <= want {
		t.Status = Met
	}
	return t
}

// cpuTargets compare onceflow EOS's CPU per event with Kafka Streams EOS's
// at p, the primary figures: process + broker (when the broker's CPU was
// measured), then the process alone. A bound of 0 reports the ratio only.
func cpuTargets(p *Result, label string, wantTotal, wantProcess float64) []Target {
	nameTotal := "orders EOS CPU per event, process + broker, over Kafka Streams EOS's, " + label
	nameProc := "orders EOS CPU per event, process, over Kafka Streams EOS's, " + label
	eos, why := variant(p, "eos")
	ks, why2 := variant(p, "kstreams_eos")
	if eos == nil || ks == nil {
		return []Target{noData(nameTotal, reasons(why, why2)), noData(nameProc, reasons(why, why2))}
	}
	measured := fmt.Sprintf("onceflow %s, %s; Kafka Streams %s, %s", cpuText(eos), rateText(eos, "events"), cpuText(ks), rateText(ks, "events"))
	target := func(name string, ratio, want float64) Target {
		if want > 0 {
			return atMost(name, measured, ratio, want)
		}
		return Target{Name: name, Measured: measured, Value: fmt.Sprintf("%.3f", ratio), Status: Reported}
	}
	var ts []Target
	if eos.BrokerCPUSecPerMillion > 0 && ks.BrokerCPUSecPerMillion > 0 {
		ts = append(ts, target(nameTotal, Ratio(totalCPU(eos), totalCPU(ks)), wantTotal))
	} else {
		ts = append(ts, noData(nameTotal, "the broker's CPU was not measured"))
	}
	return append(ts, target(nameProc, Ratio(eos.CPUSecPerMillion, ks.CPUSecPerMillion), wantProcess))
}

func (r *fullRun) ordersTargets() []Target {
	var ts []Target
	sizes := []struct {
		step, label string
	}{{StepOrders300k, "300,000 events"}, {StepOrders3M, "3,000,000 events"}}
	for _, sz := range sizes {
		p := r.point(sz.step, "orders", 0)
		if sz.step == StepOrders3M {
			ts = append(ts, cpuTargets(p, sz.label, wantCPUTotalOverKStreams, wantCPUProcessOverKStreams)...)
		} else {
			ts = append(ts, cpuTargets(p, sz.label, 0, 0)...)
		}
		name := "orders EOS ≥ 2.0 × Kafka Streams EOS, " + sz.label
		eos, why := variant(p, "eos")
		ks, why2 := variant(p, "kstreams_eos")
		if eos == nil || ks == nil {
			ts = append(ts, noData(name, reasons(why, why2)))
		} else {
			ts = append(ts, atLeast(name, fmt.Sprintf("%s events: %s / %s; onceflow %s, Kafka Streams %s",
				num(float64(p.Records)), rateText(eos, "events"), rateText(ks, "events"), cpuText(eos), cpuText(ks)),
				Ratio(eos.RecordsPerSec, ks.RecordsPerSec), wantOrdersOverKStreams))
			if eos.BrokerCPUSecPerMillion > 0 && ks.BrokerCPUSecPerMillion > 0 {
				// On a machine whose cores are all busy, events/s is the
				// cores over the CPU every event costs: the variant's and
				// the broker's.
				own, theirs := eos.CPUSecPerMillion+eos.BrokerCPUSecPerMillion, ks.CPUSecPerMillion+ks.BrokerCPUSecPerMillion
				ts = append(ts, Target{Name: "the bound on this machine: Kafka Streams EOS over onceflow EOS CPU per event, processor + broker, " + sz.label,
					Measured: fmt.Sprintf("onceflow %.1f + %.1f = %.1f, Kafka Streams %.1f + %.1f = %.1f s per M",
						eos.CPUSecPerMillion, eos.BrokerCPUSecPerMillion, own, ks.CPUSecPerMillion, ks.BrokerCPUSecPerMillion, theirs),
					Value: fmt.Sprintf("%.3f", Ratio(theirs, own)), Status: Reported})
			}
		}
		name = "orders EOS ≥ 0.90 × ALOS, " + sz.label
		alos, why3 := variant(p, "alos")
		if eos == nil || alos == nil {
			ts = append(ts, noData(name, reasons(why, why3)))
		} else {
			ts = append(ts, atLeast(name, fmt.Sprintf("%s / %s events/s; EOS %s, ALOS %s",
				num(eos.RecordsPerSec), num(alos.RecordsPerSec), cpuText(eos), cpuText(alos)),
				Ratio(eos.RecordsPerSec, alos.RecordsPerSec), wantEOSOverALOSOrders))
		}
	}

	for _, sz := range []struct{ step, label string }{
		{StepOrders300kThreads, "300,000 events, two threads each"}, {StepOrders3MThreads, "3,000,000 events, two threads each"}} {
		p := r.point(sz.step, "orders", 0)
		ts = append(ts, cpuTargets(p, sz.label, 0, 0)...)
		name := "orders EOS throughput over Kafka Streams EOS's, " + sz.label
		eos, why := variant(p, "eos")
		ks, why2 := variant(p, "kstreams_eos")
		if eos == nil || ks == nil {
			ts = append(ts, noData(name, reasons(why, why2)))
			continue
		}
		ts = append(ts, Target{Name: name, Measured: fmt.Sprintf("%s / %s", rateText(eos, "events"), rateText(ks, "events")),
			Value: fmt.Sprintf("%.3f", Ratio(eos.RecordsPerSec, ks.RecordsPerSec)), Status: Reported})
	}

	name := "orders EOS CPU per event grows ≤ 25 % from 300,000 to 3,000,000 events"
	small, why := variant(r.point(StepOrders300k, "orders", 0), "eos")
	large, why2 := variant(r.point(StepOrders3M, "orders", 0), "eos")
	if small == nil || large == nil || small.CPUSecPerMillion <= 0 {
		ts = append(ts, noData(name, reasons(why, why2)))
	} else {
		growth := (large.CPUSecPerMillion/small.CPUSecPerMillion - 1) * 100
		t := Target{Name: name, Measured: fmt.Sprintf("%.1f → %.1f s per M", small.CPUSecPerMillion, large.CPUSecPerMillion),
			Value: fmt.Sprintf("%+.0f %%", growth), Want: fmt.Sprintf("≤ %+.0f %%", wantCPUGrowthPct), Status: NotMet}
		if growth <= wantCPUGrowthPct {
			t.Status = Met
		}
		ts = append(ts, t)
	}
	return ts
}

func sizeLabel(vs int) string {
	if vs >= 1000 && vs%1000 == 0 {
		return fmt.Sprintf("%d KB", vs/1000)
	}
	return fmt.Sprintf("%d B", vs)
}

func (r *fullRun) copyTargets() []Target {
	var ts []Target
	for _, vs := range []int{100, 1000} {
		p := r.point(StepCopy, "copy", vs)
		eos, why := variant(p, "eos")
		alos, why2 := variant(p, "alos")
		name := "copy EOS ≥ 0.95 × ALOS, " + sizeLabel(vs)
		if eos == nil || alos == nil {
			ts = append(ts, noData(name, reasons(why, why2)))
		} else {
			ts = append(ts, atLeast(name, fmt.Sprintf("%s records: %s / %s records/s; EOS %s, ALOS %s",
				num(float64(p.Records)), num(eos.RecordsPerSec), num(alos.RecordsPerSec), cpuText(eos), cpuText(alos)),
				Ratio(eos.RecordsPerSec, alos.RecordsPerSec), wantEOSOverALOSCopy))
		}
		sarama, why3 := variant(p, "sarama")
		name = "copy EOS ≥ 1.0 × sarama loop, throughput, " + sizeLabel(vs)
		name2 := "copy EOS ≥ 1.0 × sarama loop, CPU per record (the loop's over EOS's), " + sizeLabel(vs)
		if eos == nil || sarama == nil {
			ts = append(ts, noData(name, reasons(why, why3)), noData(name2, reasons(why, why3)))
			continue
		}
		ts = append(ts, atLeast(name, fmt.Sprintf("%s / %s records/s", num(eos.RecordsPerSec), num(sarama.RecordsPerSec)),
			Ratio(eos.RecordsPerSec, sarama.RecordsPerSec), wantEOSOverSarama))
		ts = append(ts, atLeast(name2, fmt.Sprintf("EOS %s, sarama %s", cpuText(eos), cpuText(sarama)),
			Ratio(sarama.CPUSecPerMillion, eos.CPUSecPerMillion), wantEOSOverSarama))
	}
	return ts
}

// p99Target is a latency target: EOS p99 ≤ the commit interval +
// P99OverInterval at the step's fixed rate.
func p99Target(name string, p *Result) Target {
	eos, why := variant(p, "eos")
	if eos == nil {
		return noData(name, why)
	}
	if eos.P99Ms <= 0 {
		return noData(name, "no latency run of eos")
	}
	// From the constant, not the stored P99TargetMs: results of an older
	// harness stored another bound.
	want := p99BoundMs(time.Duration(p.CommitIntervalMs * float64(time.Millisecond)))
	t := Target{Name: name, Measured: latencyText(eos, p), Value: fmt.Sprintf("%.0f ms", eos.P99Ms),
		Want: fmt.Sprintf("≤ %.0f ms", want), Status: NotMet}
	if eos.P99Ms <= want {
		t.Status = Met
	}
	return t
}

// latencyText is EOS's latency at p with the other variants' p99 beside it.
func latencyText(eos *VariantResult, p *Result) string {
	s := fmt.Sprintf("p50 %.0f, p99 %.0f ms at %s records/s", eos.P50Ms, eos.P99Ms, num(eos.LatencyRate))
	names, all := p.variants()
	var others []string
	for _, n := range names {
		if v := all[n]; n != "eos" && v.P99Ms > 0 {
			others = append(others, fmt.Sprintf("%s %.0f", n, v.P99Ms))
		}
	}
	if len(others) > 0 {
		s += "; p99 of " + strings.Join(others, ", ") + " ms"
	}
	return s
}

func (r *fullRun) latencyTargets() []Target {
	bound := fmt.Sprintf("interval + %d ms", P99OverInterval.Milliseconds())
	ts := []Target{
		p99Target("copy EOS p99 ≤ "+bound+" at 20,000 records/s, 100 B", r.point(StepCopy, "copy", 100)),
		p99Target("copy EOS p99 ≤ "+bound+" at 20,000 records/s, 1 KB", r.point(StepCopy, "copy", 1000)),
		p99Target("orders EOS p99 ≤ "+bound+" at 2,000 events/s", r.point(StepOrders300k, "orders", 0)),
	}
	for _, h := range []struct{ name, step, workload string }{
		{"copy EOS p99 at half the maximum, 100 B", StepCopyHalfMax, "copy"},
		{"orders EOS p99 at half the maximum", StepOrders300kHalfMax, "orders"},
	} {
		vs := 0
		if h.workload == "copy" {
			vs = 100
		}
		p := r.point(h.step, h.workload, vs)
		eos, why := variant(p, "eos")
		if eos == nil || eos.P99Ms <= 0 {
			if why == "" {
				why = "no latency run of eos"
			}
			ts = append(ts, noData(h.name, why))
			continue
		}
		ts = append(ts, Target{Name: h.name, Measured: latencyText(eos, p) + fmt.Sprintf(" (maximum %s)", num(eos.RecordsPerSec)),
			Value: fmt.Sprintf("%.0f ms", eos.P99Ms), Status: Reported})
	}
	return ts
}

// restoreFigures are what onceflow scenario orders printed.
type restoreFigures struct {
	coldRecords   int64
	coldSec       float64
	coldPerSec    float64
	killToExit    []float64
	restartToRdy  []float64
	killToReady   []float64
	restoredLocal []int64 // changelog records the restarted replica restored
}

var (
	coldRe = regexp.MustCompile(`^cold restore: (\d+) changelog records in ([0-9.]+) s to ready .* = (\d+) records/s`)
	killRe = regexp.MustCompile(`r3 back: restored (\d+) changelog records; kill -> exit ([0-9.]+) s, restart -> ready ([0-9.]+) s, kill -> ready ([0-9.]+) s`)
)

// parseRestore reads the restore step's output.
func parseRestore(rd io.Reader) (*restoreFigures, error) {
	f := &restoreFigures{}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := coldRe.FindStringSubmatch(line); m != nil {
			f.coldRecords, _ = strconv.ParseInt(m[1], 10, 64)
			f.coldSec, _ = strconv.ParseFloat(m[2], 64)
			f.coldPerSec, _ = strconv.ParseFloat(m[3], 64)
		}
		if m := killRe.FindStringSubmatch(line); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			f.restoredLocal = append(f.restoredLocal, n)
			for i, dst := range []*[]float64{&f.killToExit, &f.restartToRdy, &f.killToReady} {
				v, _ := strconv.ParseFloat(m[i+2], 64)
				*dst = append(*dst, v)
			}
		}
	}
	return f, sc.Err()
}

func secs(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(s, ", ")
}

func (r *fullRun) restoreTargets() []Target {
	const cold = "cold restore ≥ 250,000 changelog records/s"
	const kill = "SIGKILL → processing (kill → ready) < 2 s, state local"
	const restart = "restart → ready < 2 s after a SIGKILL, state local"
	f := r.restore
	if f == nil {
		why := "no " + StepRestore + "/output.txt"
		return []Target{noData(cold, why), noData(kill, why), noData(restart, why)}
	}
	var ts []Target
	if f.coldSec <= 0 {
		ts = append(ts, noData(cold, "no cold restore line in the output"))
	} else {
		t := Target{Name: cold, Measured: fmt.Sprintf("%s records in %.2f s (process start, join and restore)", num(float64(f.coldRecords)), f.coldSec),
			Value: num(f.coldPerSec) + "/s", Want: "≥ " + num(wantRestorePerSec) + "/s", Status: NotMet}
		if f.coldPerSec >= wantRestorePerSec {
			t.Status = Met
		}
		ts = append(ts, t)
	}
	if len(f.killToReady) == 0 {
		return append(ts, noData(kill, "no SIGKILL in the output"), noData(restart, "no SIGKILL in the output"))
	}
	local := make([]string, len(f.restoredLocal))
	for i, n := range f.restoredLocal {
		local[i] = strconv.FormatInt(n, 10)
	}
	for _, k := range []struct {
		name string
		vs   []float64
	}{{kill, f.killToReady}, {restart, f.restartToRdy}} {
		worst := slices.Max(k.vs)
		t := Target{Name: k.name, Measured: fmt.Sprintf("%d kills: kill → ready %s s; kill → exit %s s; restart → ready %s s; records restored %s",
			len(f.killToReady), secs(f.killToReady), secs(f.killToExit), secs(f.restartToRdy), strings.Join(local, ", ")),
			Value: fmt.Sprintf("worst %.2f s", worst), Want: fmt.Sprintf("< %.0f s", wantKillToReadySec), Status: NotMet}
		if worst < wantKillToReadySec {
			t.Status = Met
		}
		ts = append(ts, t)
	}
	return ts
}

func (r *fullRun) scaleTargets() []Target {
	var ts []Target
	var one float64
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("scale: orders EOS, 12 partitions, %d replica(s)", i)
		p := r.point(StepScale+strconv.Itoa(i), "orders", 0)
		eos, why := variant(p, "eos")
		if eos == nil {
			ts = append(ts, noData(name, why))
			continue
		}
		if i == 1 {
			one = eos.RecordsPerSec
		}
		value := num(eos.RecordsPerSec) + " events/s"
		if i > 1 && one > 0 {
			value += fmt.Sprintf(" (%.2f ×)", eos.RecordsPerSec/one)
		}
		ts = append(ts, Target{Name: name, Measured: fmt.Sprintf("%s, peak RSS %.0f MB", cpuText(eos), eos.PeakRSSMB), Value: value, Status: Reported})
	}
	for _, s := range []struct{ step, label string }{{StepOrders300k, "300,000"}, {StepOrders3M, "3,000,000"}} {
		name := "state-size cost: orders EOS after " + s.label + " events"
		eos, why := variant(r.point(s.step, "orders", 0), "eos")
		if eos == nil {
			ts = append(ts, noData(name, why))
			continue
		}
		state := "Pebble size not reported"
		if eos.StateMB > 0 {
			state = fmt.Sprintf("Pebble %.0f MB", eos.StateMB)
		}
		ts = append(ts, Target{Name: name, Measured: fmt.Sprintf("%s, peak RSS %.0f MB", state, eos.PeakRSSMB),
			Value: fmt.Sprintf("%.1f CPU s per M", eos.CPUSecPerMillion), Status: Reported})
	}
	return ts
}

// num formats a figure with thousands separators, no decimals.
func num(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// WriteTargets writes the targets as a Markdown table, with the counts of
// each status and the steps that failed.
func WriteTargets(w io.Writer, dir string, ts []Target) error {
	counts := map[string]int{}
	for _, t := range ts {
		counts[t.Status]++
	}
	fmt.Fprintf(w, "# Targets of the full benchmark in %s\n\n", filepath.Base(filepath.Clean(dir)))
	fmt.Fprintf(w, "Generated by `onceflow bench-targets` from the steps' results.json and output.txt. "+
		"%d met, %d not met, %d reported, %d without data. "+
		"CPU per event (process + broker, then the process alone) is the primary figure, throughput beside it; "+
		"each is the median of the step's rotated repeats with its min–max in brackets, "+
		"measured after each run's cold window where the step set one (cold figures apart).\n\n",
		counts[Met], counts[NotMet], counts[Reported], counts[NoData])
	fmt.Fprintln(w, "| target | measured | value | bound | status |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, t := range ts {
		want := t.Want
		if want == "" {
			want = "–"
		}
		status := t.Status
		if status == Met || status == NotMet {
			status = "**" + status + "**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", cell(t.Name), cell(t.Measured), cell(t.Value), cell(want), status)
	}
	fmt.Fprintf(w, "\n## Durability and dedup\n\n%s", DurabilityNote())
	steps, err := stepSummaries(dir)
	if err != nil {
		return err
	}
	if len(steps) > 0 {
		fmt.Fprintln(w, "\n## Steps")
		fmt.Fprintln(w)
		for _, s := range steps {
			fmt.Fprintf(w, "- %s\n", s)
		}
	}
	return nil
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// stepSummaries lists each step directory with its command.txt's exit
// line and load averages (what scripts/bench-full.sh writes there).
func stepSummaries(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "command.txt"))
		if err != nil {
			continue
		}
		var facts []string
		for _, line := range strings.Split(string(b), "\n") {
			for _, prefix := range []string{"exit ", "load average before", "load average after", "started", "finished"} {
				if strings.HasPrefix(line, prefix) {
					facts = append(facts, strings.TrimSpace(line))
				}
			}
		}
		out = append(out, fmt.Sprintf("`%s`: %s", e.Name(), strings.Join(facts, "; ")))
	}
	return out, nil
}
