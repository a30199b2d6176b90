package benchmarks

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Phases of a run.
const (
	// PhaseThroughput: the input is written first, then the variant starts;
	// records/s, CPU and memory are measured from the first committed offset
	// to the last, so start-up (join, assignment, first fetch) is not.
	PhaseThroughput = "throughput"
	// PhaseLatency: the variant starts on an empty topic and is in its
	// group before the input is written at a steady rate; each record's
	// delay from its timestamp to a read_committed reader is measured.
	PhaseLatency = "latency"
)

// Measurement is one run of one variant.
type Measurement struct {
	Variant string `json:"variant"`
	Phase   string `json:"phase"`
	Repeat  int    `json:"repeat"`
	// Position is the run's place in its repeat (0: first), which rotates
	// from repeat to repeat.
	Position int `json:"position"`

	RecordsPerSec float64 `json:"records_per_sec,omitempty"`
	WindowSec     float64 `json:"window_sec,omitempty"`
	// WindowFromStart: too little of the run fell between the first and the
	// last committed offset, so the window starts when the variant did.
	WindowFromStart  bool    `json:"window_from_start,omitempty"`
	CPUSecPerMillion float64 `json:"cpu_sec_per_million,omitempty"`
	// BrokerCPUSecPerMillion is the broker's CPU time in the same window
	// (Config.BrokerPids), per million records.
	BrokerCPUSecPerMillion float64 `json:"broker_cpu_sec_per_million,omitempty"`
	// TotalCPUSecPerMillion is the primary figure: the process's CPU plus
	// the broker's per million records, when the broker's is known (its
	// pids given, or the embedded broker, whose CPU is in the process's).
	TotalCPUSecPerMillion float64 `json:"total_cpu_sec_per_million,omitempty"`
	PeakRSSMB             float64 `json:"peak_rss_mb,omitempty"`
	// Cold are the figures from the first commit until Config.ColdRecords
	// were committed, left out of the window above (nil: no split).
	Cold *ColdFigures `json:"cold,omitempty"`
	// StateMB is the size of the run's state directory when the run had
	// committed its whole input (onceflow: Pebble, its WAL included; Kafka
	// Streams: RocksDB and checkpoints, its own log left out).
	StateMB float64 `json:"state_mb,omitempty"`

	Rate         float64 `json:"rate,omitempty"`          // records/s asked for (latency runs)
	AchievedRate float64 `json:"achieved_rate,omitempty"` // records/s written
	P50Ms        float64 `json:"p50_ms,omitempty"`
	P99Ms        float64 `json:"p99_ms,omitempty"`
	P999Ms       float64 `json:"p999_ms,omitempty"`
	MaxMs        float64 `json:"max_ms,omitempty"`

	Txn           *TxnStats `json:"txn,omitempty"`
	InputRecords  int       `json:"input_records"`
	OutputRecords int64     `json:"output_records"`
	Check         string    `json:"check"` // "ok" or what is wrong
	Error         string    `json:"error,omitempty"`
}

// VariantResult is one variant at one sweep point: medians over repeats,
// and each figure's spread over them.
type VariantResult struct {
	// TotalCPUSecPerMillion is the primary figure: CPU seconds per million
	// records of the process and the broker together (0: the broker's
	// CPU was not measured). On a machine whose cores are all busy,
	// records/s is the cores over this.
	TotalCPUSecPerMillion float64 `json:"total_cpu_sec_per_million,omitempty"`
	// CPUSecPerMillion is the process's own CPU per million records.
	CPUSecPerMillion float64 `json:"cpu_sec_per_million"`
	RecordsPerSec    float64 `json:"records_per_sec"`
	P50Ms            float64 `json:"p50_ms"`
	P99Ms            float64 `json:"p99_ms"`
	P999Ms           float64 `json:"p999_ms"`
	MaxMs            float64 `json:"max_ms"`
	// LatencyRate is the rate (records/s) the latency runs wrote at.
	LatencyRate   float64 `json:"latency_rate"`
	CommitP50Ms   float64 `json:"commit_p50_ms"`
	CommitP99Ms   float64 `json:"commit_p99_ms"`
	CommitMeanMs  float64 `json:"commit_mean_ms"`
	RecordsPerTxn float64 `json:"records_per_txn"`
	// BrokerCPUSecPerMillion is the broker's CPU per million records in
	// the throughput runs (0: no Config.BrokerPids).
	BrokerCPUSecPerMillion float64 `json:"broker_cpu_sec_per_million,omitempty"`
	PeakRSSMB              float64 `json:"peak_rss_mb"`
	// StateMB is the median size of the state directory at the end of the
	// throughput runs.
	StateMB float64 `json:"state_mb,omitempty"`

	// Cold are the medians of the runs' cold figures (Config.ColdRecords;
	// nil: no split); their spreads are under spread as cold_<figure>.
	Cold *ColdFigures `json:"cold,omitempty"`
	// Spread is each figure's range over the runs, by the figure's JSON
	// name (records_per_sec, total_cpu_sec_per_million, p99_ms, ...);
	// figures that no run measured are absent.
	Spread map[string]Spread `json:"spread,omitempty"`

	RunsRecordsPerSec []float64 `json:"runs_records_per_sec"`
	RunsP99Ms         []float64 `json:"runs_p99_ms"`
	// Check is "ok" when every run's output was right, else the first
	// problem.
	Check  string   `json:"check"`
	Errors []string `json:"errors,omitempty"`
}

// Result is one sweep point.
type Result struct {
	Workload         string  `json:"workload"`
	CommitIntervalMs float64 `json:"commit_interval_ms"`
	ValueSize        int     `json:"value_size,omitempty"`
	Records          int     `json:"records"`

	EOS         *VariantResult `json:"eos"`
	ALOS        *VariantResult `json:"alos"`
	EOSOverALOS float64        `json:"eos_over_alos"`

	Peers        map[string]*VariantResult `json:"peers,omitempty"`
	PeersSkipped map[string]string         `json:"peers_skipped,omitempty"`
	// CPURatios are of the primary figure, process + broker CPU per
	// record, named a_over_b (lower is cheaper for a); ProcessCPURatios of
	// the process's CPU alone.
	CPURatios        map[string]float64 `json:"cpu_ratios,omitempty"`
	ProcessCPURatios map[string]float64 `json:"process_cpu_ratios,omitempty"`
	// Ratios of records/s, named a_over_b (eos_over_sarama, ...).
	Ratios map[string]float64 `json:"ratios,omitempty"`
	// P99TargetMs is the commit interval plus P99OverInterval: the p99
	// exactly-once aims for at the latency runs' rate.
	P99TargetMs float64       `json:"p99_target_ms"`
	Runs        []Measurement `json:"runs"`
}

// Machine describes where the bench ran.
type Machine struct {
	CPUs      int     `json:"cpus"`
	CPUModel  string  `json:"cpu_model,omitempty"`
	MemoryGB  float64 `json:"memory_gb,omitempty"`
	OS        string  `json:"os"`
	GoVersion string  `json:"go_version"`
}

// Report is a whole bench: the first point's result at the top level (so
// one-point runs read as one object), every point under sweep.
type Report struct {
	Result

	Command     string    `json:"command,omitempty"`
	Started     time.Time `json:"started"`
	DurationSec float64   `json:"duration_sec"`
	Broker      string    `json:"broker"` // "embedded" or the bootstrap addresses
	BrokerPids  []int     `json:"broker_pids,omitempty"`
	Partitions  int       `json:"partitions"`
	Replicas    int       `json:"replicas"`
	// Threads of each replica (Config.Threads).
	Threads int `json:"threads,omitempty"`
	Repeats int `json:"repeats"`
	// ColdRecords is Config.ColdRecords: each throughput window starts
	// once this many records were committed (0: no split).
	ColdRecords int      `json:"cold_records,omitempty"`
	Machine     Machine  `json:"machine"`
	Notes       []string `json:"notes,omitempty"`
	Sweep       []Result `json:"sweep"`
}

// WriteJSON writes the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// variantOrder sorts variant names for tables: onceflow first, then the
// floor, then the peers.
var variantOrder = []string{"eos", "alos", "sarama", "franz", "kstreams_eos", "kstreams_alos"}

func orderOf(name string) int {
	if i := slices.Index(variantOrder, name); i >= 0 {
		return i
	}
	return len(variantOrder)
}

// variants returns the result's variants by name, in table order.
func (r *Result) variants() ([]string, map[string]*VariantResult) {
	all := map[string]*VariantResult{}
	if r.EOS != nil {
		all["eos"] = r.EOS
	}
	if r.ALOS != nil {
		all["alos"] = r.ALOS
	}
	for n, v := range r.Peers {
		all[n] = v
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := orderOf(a) - orderOf(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return names, all
}

// column is one figure of the tables: its header, its JSON name (the key
// of VariantResult.Spread), its median and its format.
type column struct {
	header, name string
	median       func(*VariantResult) float64
	format       string
}

// columns are the tables' figures, the primary one (CPU per record,
// process + broker) first and throughput beside it.
var columns = []column{
	{"CPU s/M rec proc+broker", "total_cpu_sec_per_million", func(v *VariantResult) float64 { return v.TotalCPUSecPerMillion }, "%.2f"},
	{"CPU s/M rec proc", "cpu_sec_per_million", func(v *VariantResult) float64 { return v.CPUSecPerMillion }, "%.2f"},
	{"broker CPU s/M rec", "broker_cpu_sec_per_million", func(v *VariantResult) float64 { return v.BrokerCPUSecPerMillion }, "%.2f"},
	{"records/s", "records_per_sec", func(v *VariantResult) float64 { return v.RecordsPerSec }, "%.0f"},
	{"p50 ms", "p50_ms", func(v *VariantResult) float64 { return v.P50Ms }, "%.1f"},
	{"p99 ms", "p99_ms", func(v *VariantResult) float64 { return v.P99Ms }, "%.1f"},
	{"at rec/s", "latency_rate", func(v *VariantResult) float64 { return v.LatencyRate }, "%.0f"},
	{"commit p50 ms", "commit_p50_ms", func(v *VariantResult) float64 { return v.CommitP50Ms }, "%.1f"},
	{"commit p99 ms", "commit_p99_ms", func(v *VariantResult) float64 { return v.CommitP99Ms }, "%.1f"},
	{"rec/txn", "records_per_txn", func(v *VariantResult) float64 { return v.RecordsPerTxn }, "%.1f"},
	{"peak RSS MB", "peak_rss_mb", func(v *VariantResult) float64 { return v.PeakRSSMB }, "%.0f"},
	{"state MB", "state_mb", func(v *VariantResult) float64 { return v.StateMB }, "%.1f"},
}

// WriteTable writes the report as readable tables, two per point: the
// medians, then each figure's spread (min–max) over the runs.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "onceflow bench: broker %s, %d partitions, %d replica(s) of %d thread(s), median of %d run(s) each (order rotated), %s\n",
		r.Broker, r.Partitions, r.Replicas, max(r.Threads, 1), r.Repeats, r.Started.Format(time.RFC3339))
	for i := range r.Sweep {
		p := &r.Sweep[i]
		fmt.Fprintf(w, "\n%s, commit interval %gms", p.Workload, p.CommitIntervalMs)
		if p.ValueSize > 0 {
			fmt.Fprintf(w, ", values %d B", p.ValueSize)
		}
		fmt.Fprintf(w, ", %d records\n", p.Records)
		names, all := p.variants()
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "median\t")
		for _, c := range columns {
			fmt.Fprintf(tw, "%s\t", c.header)
		}
		fmt.Fprintln(tw, "check\t")
		for _, n := range names {
			fmt.Fprintf(tw, "%s\t", n)
			for _, c := range columns {
				fmt.Fprintf(tw, "%s\t", figure(c.format, c.median(all[n])))
			}
			fmt.Fprintf(tw, "%s\t\n", all[n].Check)
		}
		fmt.Fprint(tw, "min–max\t")
		for range columns {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprintln(tw, "\t")
		for _, n := range names {
			fmt.Fprintf(tw, "%s\t", n)
			for _, c := range columns {
				fmt.Fprintf(tw, "%s\t", spreadText(c.format, all[n].Spread, c.name))
			}
			fmt.Fprintln(tw, "\t")
		}
		tw.Flush()
		writeRatios(w, "CPU per record, process + broker (lower is cheaper)", p.CPURatios)
		writeRatios(w, "CPU per record, process", p.ProcessCPURatios)
		writeRatios(w, "throughput", p.Ratios)
		for _, n := range names {
			if c := all[n].Cold; c != nil {
				fmt.Fprintf(w, "%s cold window, first commit until %d records committed (%d in it; left out above): %s\n",
					n, r.ColdRecords, c.Records, coldText(c, all[n].Spread))
			}
		}
		if p.EOS != nil && p.EOS.P99Ms > 0 {
			verdict := "within"
			if p.EOS.P99Ms > p.P99TargetMs {
				verdict = "above"
			}
			fmt.Fprintf(w, "eos p99 %.1f ms at %.0f records/s: %s the target of %g ms (%s)\n",
				p.EOS.P99Ms, p.EOS.LatencyRate, verdict, p.P99TargetMs, p99BoundText())
		}
		for _, k := range sortedKeys(p.PeersSkipped) {
			fmt.Fprintf(w, "skipped %s: %s\n", k, p.PeersSkipped[k])
		}
		for _, n := range names {
			for _, e := range all[n].Errors {
				fmt.Fprintf(w, "error in %s: %s\n", n, e)
			}
		}
	}
	if r.hasKStreams() {
		fmt.Fprintf(w, "\n%s", DurabilityNote())
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// hasKStreams reports whether a Kafka Streams variant ran at some point.
func (r *Report) hasKStreams() bool {
	for i := range r.Sweep {
		_, all := r.Sweep[i].variants()
		if all["kstreams_eos"] != nil || all["kstreams_alos"] != nil {
			return true
		}
	}
	return false
}

// coldText gives a variant's cold figures with their spread.
func coldText(c *ColdFigures, spread map[string]Spread) string {
	var parts []string
	if c.TotalCPUSecPerMillion > 0 {
		parts = append(parts, fmt.Sprintf("CPU s/M rec proc+broker %.2f (%s)", c.TotalCPUSecPerMillion, spreadText("%.2f", spread, "cold_total_cpu_sec_per_million")))
	}
	parts = append(parts, fmt.Sprintf("CPU s/M rec proc %.2f (%s)", c.CPUSecPerMillion, spreadText("%.2f", spread, "cold_cpu_sec_per_million")),
		fmt.Sprintf("records/s %.0f (%s)", c.RecordsPerSec, spreadText("%.0f", spread, "cold_records_per_sec")))
	return strings.Join(parts, ", ")
}

// writeRatios writes one line of a_over_b ratios as a/b, eos/alos first.
func writeRatios(w io.Writer, label string, rs map[string]float64) {
	ks := sortedKeys(rs)
	if len(ks) == 0 {
		return
	}
	slices.SortStableFunc(ks, func(a, b string) int { // eos/alos first
		return boolInt(b == "eos_over_alos") - boolInt(a == "eos_over_alos")
	})
	fmt.Fprintf(w, "%s:", label)
	for _, k := range ks {
		fmt.Fprintf(w, "  %s %.3f", strings.ReplaceAll(k, "_over_", "/"), rs[k])
	}
	fmt.Fprintln(w)
}

// figure formats a median, "-" when not measured.
func figure(format string, v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// spreadText formats a figure's range over the runs as min–max.
func spreadText(format string, spread map[string]Spread, name string) string {
	sp, ok := spread[name]
	if !ok {
		return "-"
	}
	return fmt.Sprintf(format+"–"+format, sp.Min, sp.Max)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Spread is one figure's range over a variant's runs.
type Spread struct {
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Runs int     `json:"runs"`
}

// nonZero drops the ratios that have no figure (0), or returns nil.
func nonZero(m map[string]float64) map[string]float64 {
	for k, v := range m {
		if v == 0 {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// summarize turns one point's measurements into its result.
func summarize(p Point, records int, ms []Measurement, skipped map[string]string) Result {
	res := Result{
		Workload:         p.Workload,
		CommitIntervalMs: float64(p.CommitInterval) / float64(time.Millisecond),
		ValueSize:        p.ValueSize,
		Records:          records,
		P99TargetMs:      p99BoundMs(p.CommitInterval),
		Runs:             ms,
	}
	byVariant := map[string][]Measurement{}
	var order []string
	for _, m := range ms {
		if _, ok := byVariant[m.Variant]; !ok {
			order = append(order, m.Variant)
		}
		byVariant[m.Variant] = append(byVariant[m.Variant], m)
	}
	for _, name := range order {
		v := summarizeVariant(byVariant[name])
		switch name {
		case "eos":
			res.EOS = v
		case "alos":
			res.ALOS = v
		default:
			if res.Peers == nil {
				res.Peers = map[string]*VariantResult{}
			}
			res.Peers[name] = v
		}
	}
	if len(skipped) > 0 {
		res.PeersSkipped = skipped
	}
	res.Ratios = ratios(res)
	res.EOSOverALOS = res.Ratios["eos_over_alos"]
	res.CPURatios = nonZero(ratiosOf(res, func(v *VariantResult) float64 { return v.TotalCPUSecPerMillion }))
	res.ProcessCPURatios = nonZero(ratiosOf(res, func(v *VariantResult) float64 { return v.CPUSecPerMillion }))
	return res
}

func summarizeVariant(ms []Measurement) *VariantResult {
	v := &VariantResult{Check: "ok"}
	figs := map[string][]float64{} // by JSON name
	add := func(name string, x float64) { figs[name] = append(figs[name], x) }
	for _, m := range ms {
		if m.Error != "" {
			v.Errors = append(v.Errors, fmt.Sprintf("%s run %d: %s", m.Phase, m.Repeat+1, m.Error))
		}
		if m.Check != "ok" && m.Check != "" && v.Check == "ok" {
			v.Check = m.Check
		}
		if m.Error != "" {
			continue
		}
		switch m.Phase {
		case PhaseThroughput:
			add("records_per_sec", m.RecordsPerSec)
			v.RunsRecordsPerSec = append(v.RunsRecordsPerSec, m.RecordsPerSec)
			add("cpu_sec_per_million", m.CPUSecPerMillion)
			add("broker_cpu_sec_per_million", m.BrokerCPUSecPerMillion)
			add("total_cpu_sec_per_million", m.TotalCPUSecPerMillion)
			add("peak_rss_mb", m.PeakRSSMB)
			add("state_mb", m.StateMB)
			if c := m.Cold; c != nil {
				add("cold_records", float64(c.Records))
				add("cold_records_per_sec", c.RecordsPerSec)
				add("cold_cpu_sec_per_million", c.CPUSecPerMillion)
				add("cold_broker_cpu_sec_per_million", c.BrokerCPUSecPerMillion)
				add("cold_total_cpu_sec_per_million", c.TotalCPUSecPerMillion)
			}
			if m.Txn != nil && m.Txn.Transactions > 0 {
				add("commit_p50_ms", m.Txn.CommitP50Ms)
				add("commit_p99_ms", m.Txn.CommitP99Ms)
				add("commit_mean_ms", m.Txn.CommitMeanMs)
				add("records_per_txn", m.Txn.RecordsPerTxn)
			}
		case PhaseLatency:
			add("p50_ms", m.P50Ms)
			add("p99_ms", m.P99Ms)
			add("p999_ms", m.P999Ms)
			add("max_ms", m.MaxMs)
			add("latency_rate", m.AchievedRate)
			v.RunsP99Ms = append(v.RunsP99Ms, m.P99Ms)
		}
	}
	med := func(name string) float64 {
		xs := figs[name]
		if !slices.ContainsFunc(xs, func(x float64) bool { return x != 0 }) {
			return 0 // not measured
		}
		if v.Spread == nil {
			v.Spread = map[string]Spread{}
		}
		v.Spread[name] = Spread{Min: slices.Min(xs), Max: slices.Max(xs), Runs: len(xs)}
		return Median(xs)
	}
	v.TotalCPUSecPerMillion = med("total_cpu_sec_per_million")
	v.CPUSecPerMillion = med("cpu_sec_per_million")
	v.BrokerCPUSecPerMillion = med("broker_cpu_sec_per_million")
	v.RecordsPerSec = med("records_per_sec")
	v.P50Ms, v.P99Ms, v.P999Ms, v.MaxMs = med("p50_ms"), med("p99_ms"), med("p999_ms"), med("max_ms")
	v.LatencyRate = med("latency_rate")
	v.CommitP50Ms, v.CommitP99Ms, v.CommitMeanMs = med("commit_p50_ms"), med("commit_p99_ms"), med("commit_mean_ms")
	v.RecordsPerTxn = med("records_per_txn")
	v.PeakRSSMB = med("peak_rss_mb")
	v.StateMB = med("state_mb")
	if len(figs["cold_records"]) > 0 {
		v.Cold = &ColdFigures{Records: int64(med("cold_records")), RecordsPerSec: med("cold_records_per_sec"),
			CPUSecPerMillion: med("cold_cpu_sec_per_million"), BrokerCPUSecPerMillion: med("cold_broker_cpu_sec_per_million"),
			TotalCPUSecPerMillion: med("cold_total_cpu_sec_per_million")}
	}
	return v
}

// ratioPairs are the variant pairs the report compares (a over b).
var ratioPairs = [][2]string{
	{"eos", "alos"}, {"eos", "sarama"}, {"eos", "franz"}, {"sarama", "franz"},
	{"eos", "kstreams_eos"}, {"alos", "kstreams_alos"}, {"kstreams_eos", "kstreams_alos"},
}

// ratiosOf gives fig(a) / fig(b) for every pair of ratioPairs that both
// ran, named a_over_b.
func ratiosOf(r Result, fig func(*VariantResult) float64) map[string]float64 {
	_, all := r.variants()
	out := map[string]float64{}
	for _, pr := range ratioPairs {
		a, okA := all[pr[0]]
		b, okB := all[pr[1]]
		if okA && okB {
			out[pr[0]+"_over_"+pr[1]] = Ratio(fig(a), fig(b))
		}
	}
	return out
}

// ratios are the throughput ratios the report quotes (a_over_b).
func ratios(r Result) map[string]float64 {
	return ratiosOf(r, func(v *VariantResult) float64 { return v.RecordsPerSec })
}

// OnceflowProblems lists failed runs and failed checks of onceflow itself
// (peers' problems are reported in the results but are not onceflow's).
func (r *Report) OnceflowProblems() []string {
	var out []string
	for _, p := range r.Sweep {
		for _, m := range p.Runs {
			if m.Variant != "eos" && m.Variant != "alos" {
				continue
			}
			where := fmt.Sprintf("%s %gms", p.Workload, p.CommitIntervalMs)
			if m.Error != "" {
				out = append(out, fmt.Sprintf("%s %s %s run %d failed: %s", where, m.Variant, m.Phase, m.Repeat+1, m.Error))
			} else if m.Check != "ok" {
				out = append(out, fmt.Sprintf("%s %s %s run %d: %s", where, m.Variant, m.Phase, m.Repeat+1, m.Check))
			}
		}
	}
	return out
}
