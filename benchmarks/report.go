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
	PeakRSSMB              float64 `json:"peak_rss_mb,omitempty"`
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

// VariantResult is one variant at one sweep point: medians over repeats.
type VariantResult struct {
	RecordsPerSec float64 `json:"records_per_sec"`
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
	P999Ms        float64 `json:"p999_ms"`
	MaxMs         float64 `json:"max_ms"`
	// LatencyRate is the rate (records/s) the latency runs wrote at.
	LatencyRate      float64 `json:"latency_rate"`
	CommitP50Ms      float64 `json:"commit_p50_ms"`
	CommitP99Ms      float64 `json:"commit_p99_ms"`
	CommitMeanMs     float64 `json:"commit_mean_ms"`
	RecordsPerTxn    float64 `json:"records_per_txn"`
	CPUSecPerMillion float64 `json:"cpu_sec_per_million"`
	// BrokerCPUSecPerMillion is the broker's CPU per million records in
	// the throughput runs (0: no Config.BrokerPids).
	BrokerCPUSecPerMillion float64 `json:"broker_cpu_sec_per_million,omitempty"`
	PeakRSSMB              float64 `json:"peak_rss_mb"`
	// StateMB is the median size of the state directory at the end of the
	// throughput runs.
	StateMB float64 `json:"state_mb,omitempty"`

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
	Repeats     int       `json:"repeats"`
	Machine     Machine   `json:"machine"`
	Notes       []string  `json:"notes,omitempty"`
	Sweep       []Result  `json:"sweep"`
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

// WriteTable writes the report as readable tables, one per point.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "onceflow bench: broker %s, %d partitions, %d replica(s), median of %d run(s) each, %s\n",
		r.Broker, r.Partitions, r.Replicas, r.Repeats, r.Started.Format(time.RFC3339))
	for i := range r.Sweep {
		p := &r.Sweep[i]
		fmt.Fprintf(w, "\n%s, commit interval %gms", p.Workload, p.CommitIntervalMs)
		if p.ValueSize > 0 {
			fmt.Fprintf(w, ", values %d B", p.ValueSize)
		}
		fmt.Fprintf(w, ", %d records\n", p.Records)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "variant\trecords/s\tp50 ms\tp99 ms\tat rec/s\tcommit p50 ms\tcommit p99 ms\trec/txn\tCPU s/M rec\tbroker CPU s/M rec\tpeak RSS MB\tstate MB\tcheck\t")
		names, all := p.variants()
		for _, n := range names {
			v := all[n]
			fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.1f\t%.0f\t%s\t%s\t%s\t%.2f\t%s\t%.0f\t%s\t%s\t\n", n, v.RecordsPerSec, v.P50Ms, v.P99Ms,
				v.LatencyRate, optional(v.CommitP50Ms), optional(v.CommitP99Ms), optional(v.RecordsPerTxn),
				v.CPUSecPerMillion, optional(v.BrokerCPUSecPerMillion), v.PeakRSSMB, optional(v.StateMB), v.Check)
		}
		tw.Flush()
		ks := sortedKeys(p.Ratios)
		slices.SortStableFunc(ks, func(a, b string) int { // eos/alos first
			return boolInt(b == "eos_over_alos") - boolInt(a == "eos_over_alos")
		})
		for i, k := range ks {
			if i > 0 {
				fmt.Fprint(w, "  ")
			}
			fmt.Fprintf(w, "%s %.3f", strings.ReplaceAll(k, "_over_", "/"), p.Ratios[k])
		}
		if len(ks) > 0 {
			fmt.Fprintln(w)
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
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func optional(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
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
	return res
}

func summarizeVariant(ms []Measurement) *VariantResult {
	v := &VariantResult{Check: "ok"}
	var rps, p50, p99, p999, mx, rate, cp50, cp99, cmean, rpt, cpu, bcpu, rss, state []float64
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
			rps = append(rps, m.RecordsPerSec)
			v.RunsRecordsPerSec = append(v.RunsRecordsPerSec, m.RecordsPerSec)
			cpu = append(cpu, m.CPUSecPerMillion)
			bcpu = append(bcpu, m.BrokerCPUSecPerMillion)
			rss = append(rss, m.PeakRSSMB)
			state = append(state, m.StateMB)
			if m.Txn != nil && m.Txn.Transactions > 0 {
				cp50 = append(cp50, m.Txn.CommitP50Ms)
				cp99 = append(cp99, m.Txn.CommitP99Ms)
				cmean = append(cmean, m.Txn.CommitMeanMs)
				rpt = append(rpt, m.Txn.RecordsPerTxn)
			}
		case PhaseLatency:
			p50 = append(p50, m.P50Ms)
			p99 = append(p99, m.P99Ms)
			p999 = append(p999, m.P999Ms)
			mx = append(mx, m.MaxMs)
			rate = append(rate, m.AchievedRate)
			v.RunsP99Ms = append(v.RunsP99Ms, m.P99Ms)
		}
	}
	v.RecordsPerSec = Median(rps)
	v.P50Ms, v.P99Ms, v.P999Ms, v.MaxMs = Median(p50), Median(p99), Median(p999), Median(mx)
	v.LatencyRate = Median(rate)
	v.CommitP50Ms, v.CommitP99Ms, v.CommitMeanMs = Median(cp50), Median(cp99), Median(cmean)
	v.RecordsPerTxn = Median(rpt)
	v.CPUSecPerMillion, v.BrokerCPUSecPerMillion, v.PeakRSSMB = Median(cpu), Median(bcpu), Median(rss)
	v.StateMB = Median(state)
	return v
}

// ratios are the throughput ratios the report quotes (a_over_b).
func ratios(r Result) map[string]float64 {
	rps := map[string]float64{}
	names, all := r.variants()
	for _, n := range names {
		rps[n] = all[n].RecordsPerSec
	}
	out := map[string]float64{}
	add := func(a, b string) {
		if _, ok := rps[a]; !ok {
			return
		}
		if _, ok := rps[b]; !ok {
			return
		}
		out[a+"_over_"+b] = Ratio(rps[a], rps[b])
	}
	add("eos", "alos")
	add("eos", "sarama")
	add("eos", "franz")
	add("sarama", "franz")
	add("eos", "kstreams_eos")
	add("alos", "kstreams_alos")
	add("kstreams_eos", "kstreams_alos")
	return out
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
