package benchmarks

// coldWindow splits a throughput run's looks at cold records: the cold
// part runs from the first commit to the first look with at least cold
// records committed (a fresh JVM interprets and compiles its hot paths
// there; a Go process fills its caches), and the steady part from there on,
// which throughputWindow then picks its window from. ok is false, and
// steady is steps, when cold is 0 or no look before the last reached it:
// the run has no cold part and is measured whole.
func coldWindow(steps []sample, cold int64) (coldStart, coldStop sample, steady []sample, ok bool) {
	if cold <= 0 || len(steps) < 3 {
		return sample{}, sample{}, steps, false
	}
	for k := 1; k < len(steps)-1; k++ {
		if steps[k].committed >= cold {
			return steps[0], steps[k], steps[k:], true
		}
	}
	return sample{}, sample{}, steps, false
}

// figures are a window's records/s and CPU per million records.
func figures(start, stop sample, brokerKnown bool) ColdFigures {
	n := stop.committed - start.committed
	f := ColdFigures{Records: n}
	if n <= 0 || !stop.at.After(start.at) {
		return f
	}
	f.RecordsPerSec = float64(n) / stop.at.Sub(start.at).Seconds()
	f.CPUSecPerMillion = (stop.cpu - start.cpu).Seconds() / float64(n) * 1e6
	f.BrokerCPUSecPerMillion = (stop.brokerCPU - start.brokerCPU).Seconds() / float64(n) * 1e6
	if brokerKnown {
		f.TotalCPUSecPerMillion = f.CPUSecPerMillion + f.BrokerCPUSecPerMillion
	}
	return f
}

// ColdFigures are a throughput run's figures before its steady window:
// from its first commit until Config.ColdRecords were committed.
type ColdFigures struct {
	// Records committed in the cold window.
	Records                int64   `json:"records"`
	RecordsPerSec          float64 `json:"records_per_sec"`
	CPUSecPerMillion       float64 `json:"cpu_sec_per_million"`
	BrokerCPUSecPerMillion float64 `json:"broker_cpu_sec_per_million,omitempty"`
	TotalCPUSecPerMillion  float64 `json:"total_cpu_sec_per_million,omitempty"`
}
