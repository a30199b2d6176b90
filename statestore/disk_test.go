package statestore

import (
	"errors"
	"fmt"
	"io/fs"
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
		// A file Pebble deletes in the background while the walk runs is
		// not there any more: it counts for nothing, as in diskBytes.
		if err != nil {
			if path != dir && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
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
	settle(t, "one write-ahead log file left after the flush", func() (bool, string) {
		_, logs, _ := duWalk(t, dir)
		return len(logs) <= 1, fmt.Sprintf("logs %v", logs)
	})
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

	// Pebble deletes the log the flush made obsolete in the background, so
	// the directory may shrink by that log's blocks between two readings.
	// The readings are compared when the directory is the same before and
	// after them all: then they describe one moment.
	du, err := exec.LookPath("du")
	if err != nil {
		t.Log("no du on this system: compared with the walk only")
		du = ""
	}
	var (
		u               Usage
		walked, duBytes int64
		logs            []string
	)
	settle(t, "the directory unchanged over Usage, a walk and du", func() (bool, string) {
		before, _, _ := duWalk(t, dir)
		var err error
		if u, err = db.Usage(); err != nil {
			t.Fatal(err)
		}
		walked, logs, _ = duWalk(t, dir)
		duBytes = walked
		if du != "" {
			// du fails on a file deleted under it: the directory changed.
			if duBytes, err = duOf(du, dir); err != nil {
				return false, err.Error()
			}
		}
		after, _, _ := duWalk(t, dir)
		return before == walked && walked == after, fmt.Sprintf("walks %d, %d, %d bytes", before, walked, after)
	})
	if int64(u.Disk) != walked {
		t.Errorf("Usage.Disk %d, allocated blocks under the directory %d (logs %v)", u.Disk, walked, logs)
	}
	if int64(u.Disk) != duBytes {
		t.Errorf("Usage.Disk %d, du -s -B1 %d (logs %v)", u.Disk, duBytes, logs)
	}
	if int64(u.Disk) < 3000*1000 {
		t.Errorf("Usage.Disk %d, want at least the 3 MB flushed", u.Disk)
	}
}

// settle waits until cond holds, asking every 10 ms, and fails the test
// with cond's last detail after 10 s. Pebble deletes obsolete files on a
// goroutine of its own, which the database gives no way to wait for.
func settle(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s within 10 s: %s", what, detail)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// duOf is what du -s -B1 reports for dir.
func duOf(du, dir string) (int64, error) {
	out, err := exec.Command(du, "-s", "-B1", dir).Output()
	if err != nil {
		return 0, fmt.Errorf("du -s -B1 %s: %w", dir, err)
	}
	n, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("du's answer %q: %w", out, err)
	}
	return n, nil
}
