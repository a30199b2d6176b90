package processor_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/processor"
)

// The page renders every part of a fixed snapshot.
func TestWriteStatusPage(t *testing.T) {
	s := processor.Status{
		Taken: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), ApplicationID: "orders", InstanceID: "orders-1",
		InSession: true, Generation: 7, MemberID: "orders-1-abc", Ready: true,
		Tasks: []processor.TaskStatus{
			{Task: "0_0", Topic: "orders", Partition: 0, State: processor.TaskRunning, Lag: 12, RecordsIn: 340},
			{Task: "0_1", Topic: "orders", Partition: 1, State: processor.TaskStalled, Lag: 9001, RecordsIn: 2, Pending: 3 * time.Minute},
		},
		Stats:                   processor.Stats{TransactionShrinks: 3, TransactionGrows: 0, HangingTransactions: 2, HangRecoveries: 1, Committed: 41, Aborted: 3, RecordsIn: 342, RecordsOut: 300, Restored: 5},
		TransactionRecordsLimit: 125, TransactionInterval: 12500 * time.Microsecond, TransactionShrunk: true,
		TransactionRate: 9.5, LastCommitLatency: 7200 * time.Millisecond, TransactionTimeout: 8 * time.Second, AbortsSinceCommit: 2,
		Rejections: map[string]int64{"duplicate": 4, "stale": 0},
		Sinks:      []processor.SinkStatus{{Sink: "mail", Succeeded: 10, DeadLettered: 1, Parked: 2, Backlog: 3}},
		Health:     "engine: stalled: partition orders/1 <pending>",
		State: []processor.StoreStatus{{Store: "orders-dedup", Task: "0_0", Bytes: 512},
			{Store: "orders-totals", Task: "0_1", Bytes: 3 << 20}},
		StateDiskBytes: 5<<20 + 1<<19, StateMemTableBytes: 2048,
	}
	var b strings.Builder
	if err := processor.WriteStatusPage(&b, s); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<meta http-equiv="refresh" content="5">`,
		"onceflow · orders · orders-1",
		"generation 7",
		`unhealthy: engine: stalled: partition orders/1 &lt;pending&gt;`, // escaped
		`<td>0_0</td><td>orders</td><td class="n">0</td>`,
		`<td class="ok">running</td>`,
		`<td class="n">12</td><td class="n">340</td>`,
		`<td>0_1</td><td>orders</td><td class="n">1</td>`,
		`<td class="bad">stalled</td>`,
		`<td class="n">9001</td><td class="n">2</td>`,
		"3m0s",
		`<td class="n">41</td>`,
		"(2 since the last commit)",
		"9.5/s",
		"headroom to the transaction timeout (8s)",
		`<td class="n bad">10%</td>`,
		"342 / 300",
		`<td>duplicate</td><td class="n warn">4</td>`,
		`<td>stale</td><td class="n">0</td>`,
		`<td>mail</td><td class="n">10</td><td class="n warn">1</td>`,
		"done (5 records restored)",
		"5.5 MiB of files on disk, 2.0 KiB of memtables",
		`<td class="n warn">125 / 12.5ms (shrunk: commits near their deadline)</td>`,
		`<td class="n warn">3 / 0</td>`,
		`<td class="n bad">2 / 1</td>`,
		`<td>orders-dedup</td><td>0_0</td><td class="n">512 B</td>`,
		`<td>orders-totals</td><td>0_1</td><td class="n">3.0 MiB</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(page)
	}
}

// A running replica serves its status page on /: its tasks, one per input
// partition, and its counters once the input is processed.
func TestStatusPageServed(t *testing.T) {
	env := enginetest.New(t)
	in, out := env.Name("in"), env.Name("out")
	env.CreateTopic(in, 3)
	env.Produce(in, 0, 90)
	reg := prometheus.NewRegistry()
	p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: env.Name("app"), InstanceID: "r1",
		Registerer: reg}, copyTopic(in, out))
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, p, reg)
	env.WaitCount(out, 90, 60*time.Second)
	var page string
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := srv.get("/")
		if code != http.StatusOK {
			t.Fatalf("/: %d %s", code, body)
		}
		page = body
		if strings.Contains(page, "90 / 90") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{"onceflow · " + env.Name("app") + " · r1", "generation ", "<span class=\"ok\">ready</span>", "90 / 90"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	rows := regexp.MustCompile(`<td>(\d+_\d+)</td><td>`+regexp.QuoteMeta(in)+`</td><td class="n">(\d+)</td>\s*<td class="ok">running</td>\s*<td class="n">(\d+)</td><td class="n">(\d+)</td>`).FindAllStringSubmatch(page, -1)
	if len(rows) != 3 {
		t.Fatalf("task rows: %d, want 3\n%s", len(rows), page)
	}
	var sum int
	for i, r := range rows {
		if r[2] != string(rune('0'+i)) || r[3] != "0" {
			t.Errorf("task row %d: partition %s lag %s, want partition %d lag 0", i, r[2], r[3], i)
		}
		var n int
		for _, c := range r[4] {
			n = 10*n + int(c-'0')
		}
		sum += n
	}
	if sum != 90 {
		t.Errorf("records in over the task rows: %d, want 90", sum)
	}
	if code, _ := srv.get("/nope"); code != http.StatusNotFound {
		t.Errorf("/nope: %d, want 404", code)
	}
}

// A restoring replica shows the restore's progress and its tasks as
// restoring; an idle one without a session says so.
func TestWriteStatusPageRestoring(t *testing.T) {
	s := processor.Status{ApplicationID: "orders", InstanceID: "orders-2", InSession: true, Generation: 3,
		Restoring: true, RestoreIdle: 1500 * time.Millisecond, Stats: processor.Stats{Restored: 12345},
		Tasks:      []processor.TaskStatus{{Task: "0_4", Topic: "orders", Partition: 4, State: processor.TaskRestoring, Lag: -1}},
		Rejections: map[string]int64{}}
	var b strings.Builder
	if err := processor.WriteStatusPage(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<span class="warn">restoring</span>: 12345 records, last progress 1.5s ago`,
		`<td class="warn">restoring</td>`,
		`<td class="n">–</td>`, // no lag before the first fetch
		`<span class="warn">not ready</span>`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page lacks %q\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := processor.WriteStatusPage(&b, processor.Status{ApplicationID: "a", InstanceID: "i"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"none yet", "No tasks assigned."} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page without a session lacks %q", want)
		}
	}
}
