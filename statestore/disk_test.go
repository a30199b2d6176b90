package statestore

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// duWalk sums the blocks allocated to dir and everything under it, as du
// does: Stat_t.Blocks * 512, not the files' lengths. It also returns the
// write-ahead log files it saw and the bytes allocated to them.
func duWalk(t *testing.T, dir string) (allocated int64, logs []string, logBytes int64) {
	t.Helper()
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			return err
		}
		allocated += st.Blocks * 512
		if strings.HasSuffix(path, ".log") {
			logBytes += st.Blocks * 512
			logs = append(logs, filepath.Base(path)+"="+strconv.FormatInt(st.Blocks*512, 10))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return allocated, logs, logBytes
}

// liveBytes is the state's logical data: the keys and values of every
// (store, task) with an offset, dedup indexes included.
func liveBytes(t *testing.T, db *DB) int64 {
	t.Helper()
	sts, err := db.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, st := range sts {
		n, complete, err := db.LiveBytes(st.Store, st.Task, 1<<40)
		if err != nil || !complete {
			t.Fatalf("live bytes of %s: %d, %v, %v", st, n, complete, err)
		}
		total += n
	}
	return total
}

// diskAllowance is what a closed state directory may hold beyond its
// tables: the directory, MANIFEST, OPTIONS and marker files (a 4 KiB block
// or less each, a dozen at most), and one write-ahead log with the chunk it
// reserves ahead (walChunk).
const diskAllowance = 2 << 20

// While the database is open, logs made obsolete by a flush are deleted,
// not kept for reuse: with a 1 MiB memtable, 20 MiB of writes rotate the
// log about twenty times, and once the memtable is flushed only the log
// in use is left.
func TestObsoleteLogsDeleted(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{MemTableSize: 1 << 20})
	st := StoreTask{"totals", Task{0, 0}}
	value := make([]byte, 1000)
	for i := range 20 {
		tx := db.Begin()
		for k := range 1000 {
			if err := tx.Put(st.Store, st.Task, []byte(strconv.Itoa(i*1000+k)), value); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Apply(map[StoreTask]int64{st: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// Pebble deletes obsolete files in the background: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, logs, _ := duWalk(t, dir)
		if len(logs) <= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d write-ahead log files 10 s after the flush, want 1: %v", len(logs), logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Usage.Disk is what du reports for the directory: the blocks allocated to
// its files and to itself, not the files' lengths (a log reserves blocks
// ahead of its end). Measured while the database is open, with a log and a
// table, and compared with a walk summing Stat_t.Blocks*512 and, where the
// system has it, with du itself.
func TestUsageDiskIsDu(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	st := StoreTask{"totals", Task{0, 0}}
	put := func(from, n int) {
		tx := db.Begin()
		for k := from; k < from+n; k++ {
			if err := tx.Put(st.Store, st.Task, []byte(strconv.Itoa(k)), make([]byte, 1000)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Apply(map[StoreTask]int64{st: int64(from + n)}); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 3000)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	put(3000, 100) // in the log only
	u, err := db.Usage()
	if err != nil {
		t.Fatal(err)
	}
	walked, logs, _ := duWalk(t, dir)
	if int64(u.Disk) != walked {
		t.Errorf("Usage.Disk %d, allocated blocks under the directory %d (logs %v)", u.Disk, walked, logs)
	}
	if int64(u.Disk) < 3000*1000 {
		t.Errorf("Usage.Disk %d, want at least the 3 MB flushed", u.Disk)
	}
	du, err := exec.LookPath("du")
	if err != nil {
		t.Log("no du on this system: compared with the walk only")
		return
	}
	out, err := exec.Command(du, "-s", "-B1", dir).Output()
	if err != nil {
		t.Logf("du -s -B1 failed (%v): compared with the walk only", err)
		return
	}
	n, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	if err != nil {
		t.Fatalf("du's answer %q: %v", out, err)
	}
	if int64(u.Disk) != n {
		t.Errorf("Usage.Disk %d, du -s -B1 %d", u.Disk, n)
	}
}
