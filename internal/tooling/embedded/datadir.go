package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ErrUncleanStop is returned (wrapped) by Start when the data dir holds
// state from a broker that did not stop cleanly (killed, crashed, or its
// state could not be saved). kfake's crash recovery is not correct for
// transactions: a transaction open at the crash is aborted in memory only,
// with no abort marker written, and producer sequence state comes from the
// last clean stop, so a later restart can make aborted records visible and
// hide committed ones. Not retryable: delete the directory, or start with
// Config.WipeUncleanDataDir (`--wipe-unclean-data-dir`) to start empty.
var ErrUncleanStop = errors.New("embedded: data dir was not stopped cleanly")

// ErrDataDirInUse is returned (wrapped) by Start when another running
// broker holds the data dir. Retryable once that broker stops.
var ErrDataDirInUse = errors.New("embedded: data dir is in use by another broker")

const (
	// cleanStopFile is written into the data dir after a clean Close has
	// saved the broker's state, and removed when a broker starts on it.
	cleanStopFile = "onceflow-clean-stop"
	// lockFile is held with flock while a broker runs on the data dir.
	lockFile = "onceflow-broker.lock"
	// kfakeMetaFile is the file kfake writes first into a data dir: its
	// presence means the dir holds broker state.
	kfakeMetaFile = "meta.json"
)

// dataDir is a data dir opened by a running broker: locked against a
// second broker, its clean-stop marker removed until Close writes it again.
type dataDir struct {
	path string
	lock *os.File
}

// openDataDir creates and locks dir, checks that the state in it (if any)
// was left by a clean stop, wiping it when wipe is set, and removes the
// clean-stop marker: from here until a clean Close, the state on disk is
// not trusted.
func openDataDir(dir string, wipe bool, log hclog.Logger) (*dataDir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded: data dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("embedded: data dir: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s: stop the other broker or choose another --data-dir", ErrDataDirInUse, dir)
		}
		return nil, fmt.Errorf("embedded: lock data dir %s: %w", dir, err)
	}
	d := &dataDir{path: dir, lock: lock}
	if err := d.checkClean(wipe, log); err != nil {
		d.release()
		return nil, err
	}
	return d, nil
}

// checkClean refuses (or, with wipe, empties) a data dir whose state was
// not left by a clean stop, then removes the clean-stop marker.
func (d *dataDir) checkClean(wipe bool, log hclog.Logger) error {
	hasState := exists(filepath.Join(d.path, kfakeMetaFile))
	clean := exists(filepath.Join(d.path, cleanStopFile))
	if hasState && !clean {
		if !wipe {
			return fmt.Errorf("%w: %s holds state from a broker that was killed or crashed (no clean-stop record); "+
				"the embedded broker cannot recover open transactions after a crash without losing or doubling records. "+
				"Delete the directory, or start with --wipe-unclean-data-dir (Config.WipeUncleanDataDir) to start empty; "+
				"stop the broker with Ctrl-C or SIGTERM to keep its data", ErrUncleanStop, d.path)
		}
		log.Warn("wiping data dir left by an unclean stop", "dir", d.path)
		if err := d.wipe(); err != nil {
			return err
		}
	}
	if err := os.Remove(filepath.Join(d.path, cleanStopFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("embedded: data dir: %w", err)
	}
	return syncDir(d.path)
}

// wipe removes everything in the data dir but the lock.
func (d *dataDir) wipe() error {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return fmt.Errorf("embedded: wipe data dir: %w", err)
	}
	for _, e := range entries {
		if e.Name() == lockFile {
			continue
		}
		if err := os.RemoveAll(filepath.Join(d.path, e.Name())); err != nil {
			return fmt.Errorf("embedded: wipe data dir: %w", err)
		}
	}
	return nil
}

// markClean records that the state in the dir was saved by a clean stop.
func (d *dataDir) markClean() error {
	path := filepath.Join(d.path, cleanStopFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("embedded: record clean stop: %w", err)
	}
	_, err = fmt.Fprintf(f, "stopped cleanly at %s\n", time.Now().UTC().Format(time.RFC3339))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(d.path)
	}
	if err != nil {
		return fmt.Errorf("embedded: record clean stop: %w", err)
	}
	return nil
}

// release unlocks the data dir.
func (d *dataDir) release() { d.lock.Close() }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// syncDir makes a file's creation or removal in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("embedded: data dir: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("embedded: sync data dir: %w", err)
	}
	return nil
}
