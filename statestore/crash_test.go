package statestore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Crash tests. Each round of the workload below is one Txn over two tasks of
// two stores, applied with both offsets. After any crash, the database must
// hold exactly the first k rounds, for some k, with offsets saying k: data
// and offsets move together or not at all.

var (
	crashA = StoreTask{"s", Task{0, 1}}
	crashB = StoreTask{"t", Task{1, 10}}
	// Values large enough that a round spans several 4 KiB file blocks and the
	// write-ahead log fills 32 KiB blocks, which Pebble then writes out
	// without syncing: a crash can keep some of them and lose others.
	crashValue = bytes.Repeat([]byte("v"), 700)
)

func crashRound(db *DB, i int) error {
	tx := db.Begin()
	defer tx.Discard()
	for j := range 10 {
		if err := tx.Put(crashA.Store, crashA.Task, fmt.Appendf(nil, "r%04d/%d", i, j), crashValue); err != nil {
			return err
		}
	}
	if i > 0 {
		if err := tx.Delete(crashA.Store, crashA.Task, fmt.Appendf(nil, "r%04d/0", i-1)); err != nil {
			return err
		}
	}
	for _, st := range []StoreTask{crashA, crashB} {
		if err := tx.Put(st.Store, st.Task, []byte("last"), strconv.AppendInt(nil, int64(i), 10)); err != nil {
			return err
		}
	}
	return tx.Apply(map[StoreTask]int64{crashA: int64(i + 1), crashB: int64(i + 1)})
}

// crashRounds checks that db holds exactly the first k rounds and returns k.
func crashRounds(t *testing.T, db *DB) int {
	t.Helper()
	offA, okA, errA := db.Offset(crashA.Store, crashA.Task)
	offB, okB, errB := db.Offset(crashB.Store, crashB.Task)
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	if offA != offB || okA != okB {
		t.Fatalf("offsets of one batch differ: %d/%v and %d/%v", offA, okA, offB, okB)
	}
	k := int(offA)
	var want []kv
	for i := range k {
		for j := range 10 {
			if j > 0 || i == k-1 {
				want = append(want, kv{fmt.Sprintf("r%04d/%d", i, j), string(crashValue)})
			}
		}
	}
	if k > 0 {
		want = append([]kv{{"last", strconv.Itoa(k - 1)}}, want...)
	}
	if got := dbRange(t, db, crashA.Store, crashA.Task); !equalKVs(got, want) {
		t.Fatalf("offset %d but %s holds %d keys, want %d (first difference near %v)", k, crashA, len(got), len(want), firstDiff(got, want))
	}
	wantB := want[:min(len(want), 1)]
	if got := dbRange(t, db, crashB.Store, crashB.Task); !equalKVs(got, wantB) {
		t.Fatalf("offset %d but %s holds %q, want %q", k, crashB, got, wantB)
	}
	return k
}

func firstDiff(a, b []kv) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("%q vs %q", a[i], b[i])
		}
	}
	return "the end"
}

// TestPowerLoss loses every write not yet synced (and, with NoSync, a random
// part of them) while a Txn is staged, and reopens.
func TestPowerLoss(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoSync=%v", noSync), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			db, err := openFS("db", fs, Options{NoSync: noSync})
			if err != nil {
				t.Fatal(err)
			}
			const rounds = 40
			for i := range rounds {
				if err := crashRound(db, i); err != nil {
					t.Fatal(err)
				}
			}
			open := db.Begin() // staged, never applied
			mustPut(t, open, crashA.Store, crashA.Task, "last", "staged")
			seen := map[int]bool{}
			for seed := range 40 {
				crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50 + seed, RNG: rand.New(rand.NewPCG(uint64(seed), 0))})
				db2, err := openFS("db", crashed, Options{})
				if err != nil {
					t.Fatalf("reopen after crash %d: %v", seed, err)
				}
				k := crashRounds(t, db2)
				seen[k] = true
				if !noSync && k != rounds {
					t.Errorf("crash %d: %d rounds survived, want all %d (each Apply synced)", seed, k, rounds)
				}
				if err := db2.Close(); err != nil {
					t.Fatal(err)
				}
			}
			open.Discard()
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			t.Logf("rounds surviving the crashes: %v", seen)
		})
	}
}

const crashChildEnv = "STATESTORE_CRASH_CHILD"

// TestKillDuringApply runs the workload in a child process that SIGKILLs
// itself at a random moment, mid-round or mid-Apply, then reopens its
// database: it must hold exactly the first k rounds, and with fsync at
// least every round the child saw applied.
func TestKillDuringApply(t *testing.T) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		crashChild(spec)
		return
	}
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, noSync := range []bool{false, true} {
		for run := range 3 {
			t.Run(fmt.Sprintf("NoSync=%v/%d", noSync, run), func(t *testing.T) {
				dir := t.TempDir()
				cmd := exec.Command(os.Args[0], "-test.run=^TestKillDuringApply$")
				cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%v,%d", crashChildEnv, dir, noSync, run))
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != -1 {
					t.Fatalf("child did not die by a signal: %v\nstdout: %s\nstderr: %s", err, out, stderr.Bytes())
				}
				applied := 0 // rounds the child saw Apply return for
				sc := bufio.NewScanner(bytes.NewReader(out))
				for sc.Scan() {
					if n, ok := strings.CutPrefix(sc.Text(), "applied "); ok {
						applied, _ = strconv.Atoi(n)
					}
				}
				db := openT(t, dir, Options{})
				k := crashRounds(t, db)
				if k > applied+1 {
					t.Fatalf("%d rounds on disk, but the child had started only %d", k, applied+1)
				}
				if !noSync && k < applied {
					t.Fatalf("%d rounds on disk, but Apply had returned for %d with fsync", k, applied)
				}
				t.Logf("child applied %d rounds, %d on disk", applied, k)
			})
		}
	}
}

// crashChild runs rounds until it kills itself, reporting each applied round
// on stdout.
func crashChild(spec string) {
	parts := strings.Split(spec, ",")
	run, _ := strconv.Atoi(parts[2])
	db, err := Open(parts[0], Options{NoSync: parts[1] == "true"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(run)))
	killAfter := 20 + rng.IntN(30)
	for i := 0; ; i++ {
		if i == killAfter {
			go func() {
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond) // the fault: a kill at a random moment
				p, _ := os.FindProcess(os.Getpid())
				_ = p.Kill()
			}()
		}
		if err := crashRound(db, i); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stdout, "applied %d\n", i+1)
	}
}
