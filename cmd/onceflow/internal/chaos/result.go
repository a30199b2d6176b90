package chaos

import (
	"fmt"
	"strings"

	"github.com/onceflow/onceflow/internal/tooling/receiver"
	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// Result is what a chaos run reports. JSON names are a contract.
type Result struct {
	Brokers []string `json:"brokers"`
	// Events is the number of committed input records read back;
	// Accepted the committed outputs.
	Events   int `json:"events"`
	Accepted int `json:"accepted"`
	// Lost counts inputs with neither an output nor a rejected record;
	// Duplicated counts extra copies; Unexpected counts records that
	// account for no input.
	Lost       int `json:"lost"`
	Duplicated int `json:"duplicated"`
	Unexpected int `json:"unexpected"`

	ReplicaKills  int `json:"replica_kills"`
	ReplicaPauses int `json:"replica_pauses"`
	BrokerKills   int `json:"broker_kills"`
	// CoordinatorKills counts broker kills aimed at the transaction
	// coordinator of a replica's transactional id; GroupCoordinatorKills
	// those aimed at the group's coordinator (with allstages, every
	// other one at the sink runners' group's). Either broker may lead
	// other things too.
	CoordinatorKills      int `json:"coordinator_kills"`
	GroupCoordinatorKills int `json:"group_coordinator_kills"`
	BrokerRestarts        int `json:"broker_restarts"`
	// NetworkFaults counts faults between one replica and one broker
	// (NetworkFaultsByMode: latency, hang, reset).
	NetworkFaults       int            `json:"network_faults"`
	NetworkFaultsByMode map[string]int `json:"network_faults_by_mode,omitempty"`
	// ProxiedConnections counts the connections the replicas opened to
	// the brokers through the proxies (with network faults).
	ProxiedConnections int64 `json:"proxied_connections"`
	// RequestFaults counts the embedded broker's request faults;
	// InjectedErrors and InjectedDelays the requests they answered with
	// an error or late, by request (produce, end-txn, txn-offset-commit).
	RequestFaults  int            `json:"request_faults"`
	InjectedErrors map[string]int `json:"injected_errors,omitempty"`
	InjectedDelays map[string]int `json:"injected_delays,omitempty"`
	// UnexpectedExits counts replicas that exited on their own (and were
	// started again).
	UnexpectedExits int     `json:"unexpected_exits"`
	Faults          []Fault `json:"faults"`

	// FaultSeconds is how long faults were injected; Seconds the time from
	// the start until all input was committed.
	FaultSeconds float64 `json:"fault_seconds"`
	Seconds      float64 `json:"seconds"`
	// LongestStallSeconds is the longest time an input partition had
	// input beyond its committed offset and that offset did not move
	// (sampled once a second); LongestStallPartition is that partition.
	LongestStallSeconds   float64 `json:"longest_stall_seconds"`
	LongestStallPartition int32   `json:"longest_stall_partition"`
	// MaxOldestPendingSeconds is the highest onceflow_oldest_pending_seconds
	// a replica reported (sampled once a second; a replica that was
	// killed or paused reports nothing meanwhile).
	MaxOldestPendingSeconds float64 `json:"max_oldest_pending_seconds"`

	// Throughput samples the group's committed input offsets (summed)
	// once a second.
	Throughput []Sample `json:"throughput,omitempty"`
	// SettleSamples sample, at each pass of the settling (allstages), the
	// receiver's effects and the sinks' outbox records the runners had
	// not read.
	SettleSamples []SettleSample `json:"settle_samples,omitempty"`

	// OperatorFaults counts operator-command faults (allstages): the
	// commands for what was parked, then a SIGKILL. Resolved and Redriven
	// count the commands written, during the faults and after them (the
	// run settles what is parked as an operator would).
	OperatorFaults int `json:"operator_faults"`
	Resolved       int `json:"resolved"`
	Redriven       int `json:"redriven"`
	// CommandsRefused counts the batches of commands sinkadmin refused
	// (a delivery not found, or not in a state the command allows);
	// CommandBatches those written (a batch per sink and kind and pass,
	// one ledger read each).
	CommandsRefused int `json:"commands_refused"`
	CommandBatches  int `json:"command_batches"`
	// Settled is set when, after all input was committed, every output,
	// window and effect arrived and every delivery succeeded within the
	// drain timeout; SettleSeconds is how long that took (or the time
	// waited when it did not).
	Settled       bool    `json:"settled"`
	SettleSeconds float64 `json:"settle_seconds"`
	// ParkedAtEnd counts the deliveries parked where an operator sees them
	// (unknown, dead-lettered) when the run ended; ParkedVisible the
	// missing effects among them (not lost: visible, waiting for an
	// operator); ParkedUnresolved those the run's own settling never
	// wrote a command for (a violation).
	ParkedAtEnd      int `json:"parked_at_end"`
	ParkedVisible    int `json:"parked_visible"`
	ParkedUnresolved int `json:"parked_unresolved"`
	// PendingApplied counts ledger entries still pending at the end whose
	// effect the receiver applied (once: more would be a violation):
	// an attempt's in-flight mark that reached the ledger's changelog
	// after the delivery had succeeded (a zombie runner's). They do not
	// hold the settling up; PendingAppliedExamples names a few.
	PendingApplied         int      `json:"pending_applied"`
	PendingAppliedExamples []string `json:"pending_applied_examples,omitempty"`

	// Topology is the topology the replicas ran.
	Topology string `json:"topology"`
	// Truth is verify's full report (orders).
	Truth verify.TruthReport `json:"truth"`
	// AllStages is the allstages check's report; Receiver the counters of
	// the run's receiver, which is not idempotent.
	AllStages *verify.AllStagesReport `json:"allstages,omitempty"`
	Receiver  receiver.Stats          `json:"receiver"`
	// Sinks counts each sink's ledger entries by state at the end
	// (allstages): what is still pending, unknown or dead-lettered.
	Sinks []sinkadmin.Status `json:"sinks,omitempty"`
	// Violations lists what failed; OK is true when there are none.
	Violations []string `json:"violations,omitempty"`
	OK         bool     `json:"ok"`
	// Dir holds the replicas' logs and state when kept (KeepLogs, or the
	// run failed).
	Dir string `json:"dir,omitempty"`
}

// Sample is the group's committed input (the sum of its committed
// offsets) At seconds after the start.
type Sample struct {
	At        float64 `json:"at_seconds"`
	Committed int64   `json:"committed"`
}

// SettleSample is, At seconds after all input was committed, the effects
// the receiver had applied and the outbox records not read yet.
type SettleSample struct {
	At      float64 `json:"at_seconds"`
	Effects int64   `json:"effects"`
	Unread  int64   `json:"unread"`
}

// settleRate is the receiver's effects per second over the settling, and
// the outbox backlog when it began.
func (r Result) settleRate() (perSecond float64, backlog int64) {
	ss := r.SettleSamples
	if len(ss) < 2 {
		return 0, 0
	}
	first, last := ss[0], ss[len(ss)-1]
	if last.At > first.At {
		perSecond = float64(last.Effects-first.Effects) / (last.At - first.At)
	}
	return perSecond, first.Unread
}

// sum adds up m's values.
func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// String is the report, a line per figure.
func (r Result) String() string {
	var b strings.Builder
	verdict := "EXACTLY-ONCE HELD: nothing lost, nothing doubled, rejections and totals equal the truth"
	if r.AllStages != nil {
		verdict = "EXACTLY-ONCE HELD: every output and window once, every effect once at the receiver, rejections and totals equal the truth"
	}
	if !r.OK {
		verdict = "VIOLATED:\n  " + strings.Join(r.Violations, "\n  ")
	}
	topo := r.Topology
	if topo == "" {
		topo = TopologyOrders
	}
	fmt.Fprintf(&b, "onceflow chaos: %s topology, 3 replicas, brokers %s\n", topo, strings.Join(r.Brokers, ","))
	fmt.Fprintf(&b, "  events (committed input)  %d\n", r.Events)
	if a := r.AllStages; a != nil {
		fmt.Fprintf(&b, "  accepted events (truth)   %d\n", r.Accepted)
		fmt.Fprintf(&b, "  account counts            %s\n", a.AccountCounts)
		fmt.Fprintf(&b, "  item counts               %s\n", a.ItemCounts)
		fmt.Fprintf(&b, "  window results            %s\n", a.Windows)
		fmt.Fprintf(&b, "  ticks                     %d wall-clock, %d stream-time; %d problems\n", a.WallTicks, a.StreamTicks, len(a.TickProblems))
		fmt.Fprintf(&b, "  rejected by reason        %v (truth %v)\n", a.Rejected, a.ExpectedRejected)
		fmt.Fprintf(&b, "  line-hook effects         %s\n", a.LineEffects)
		fmt.Fprintf(&b, "  tick-hook effects         %s\n", a.TickEffects)
		fmt.Fprintf(&b, "  receiver (not idempotent) %d requests, %d effects, %d violations (a key applied twice), answers %v\n",
			r.Receiver.Requests, r.Receiver.Effects, r.Receiver.Violations, r.Receiver.Answers)
		fmt.Fprintf(&b, "  operator commands         %d resolved, %d redriven in %d batches, %d batches refused; %d operator faults (commands, then SIGKILL)\n",
			r.Resolved, r.Redriven, r.CommandBatches, r.CommandsRefused, r.OperatorFaults)
		settled := "settled"
		if !r.Settled {
			settled = "NOT settled within the drain timeout"
		}
		fmt.Fprintf(&b, "  settling                  %s after %.1fs; parked at the end %d (missing effects among them %d, never resolved by the run %d)\n",
			settled, r.SettleSeconds, r.ParkedAtEnd, r.ParkedVisible, r.ParkedUnresolved)
		if rate, backlog := r.settleRate(); len(r.SettleSamples) > 1 {
			fmt.Fprintf(&b, "  settling backlog          %d outbox records unread when it began; %.0f effects/s at the receiver while it ran\n", backlog, rate)
		}
		if r.PendingApplied > 0 {
			fmt.Fprintf(&b, "  pending, effect applied   %d ledger entries pending at the end whose effect the receiver applied (an in-flight mark after the success) %v\n",
				r.PendingApplied, r.PendingAppliedExamples)
		}
		for _, s := range r.Sinks {
			fmt.Fprintf(&b, "  ledger %-18s %d deliveries %v\n", s.Sink, s.Deliveries, s.States)
		}
	} else {
		fmt.Fprintf(&b, "  accepted outputs          %d (truth %d)\n", r.Accepted, r.Truth.ExpectedAccepted)
		fmt.Fprintf(&b, "  rejected by reason        %v (truth %v)\n", r.Truth.Rejected, r.Truth.ExpectedRejected)
		fmt.Fprintf(&b, "  totals match truth        %t\n", r.Truth.TotalsMatch)
	}
	fmt.Fprintf(&b, "  lost                      %d (missing and nowhere visible)\n", r.Lost)
	fmt.Fprintf(&b, "  duplicated                %d\n", r.Duplicated)
	fmt.Fprintf(&b, "  unexpected                %d\n", r.Unexpected)
	fmt.Fprintf(&b, "  replica kills (SIGKILL)   %d\n", r.ReplicaKills)
	fmt.Fprintf(&b, "  replica pauses (zombies)  %d\n", r.ReplicaPauses)
	fmt.Fprintf(&b, "  broker kills / restarts   %d / %d (aimed at: %d a transaction coordinator, %d the group coordinator)\n",
		r.BrokerKills, r.BrokerRestarts, r.CoordinatorKills, r.GroupCoordinatorKills)
	fmt.Fprintf(&b, "  network faults            %d %v (one replica <-> one broker; %d connections through the proxies)\n",
		r.NetworkFaults, r.NetworkFaultsByMode, r.ProxiedConnections)
	if r.RequestFaults > 0 {
		fmt.Fprintf(&b, "  request faults            %d: injected errors %d %v, delays %d %v\n",
			r.RequestFaults, sum(r.InjectedErrors), r.InjectedErrors, sum(r.InjectedDelays), r.InjectedDelays)
	} else {
		fmt.Fprintf(&b, "  request faults            0 (none injected; a fault of the embedded broker only)\n")
	}
	fmt.Fprintf(&b, "  replica exits on their own %d\n", r.UnexpectedExits)
	fmt.Fprintf(&b, "  duration                  %.1fs of faults, all input committed after %.1fs\n", r.FaultSeconds, r.Seconds)
	fmt.Fprintf(&b, "  longest partition stall   %.1fs (partition %d; committed offset still with input pending)\n", r.LongestStallSeconds, r.LongestStallPartition)
	fmt.Fprintf(&b, "  max oldest pending        %.1fs (onceflow_oldest_pending_seconds, as sampled)\n", r.MaxOldestPendingSeconds)
	if r.Dir != "" {
		fmt.Fprintf(&b, "  logs and state            %s\n", r.Dir)
	}
	b.WriteString(verdict)
	b.WriteString("\n")
	return b.String()
}
