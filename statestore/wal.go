package statestore

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The write-ahead log's footprint on disk. Left to itself, Pebble reserves
// 110 % of MemTableSize (70 MiB at the default) for every log file it
// creates, whatever it ends up holding, and keeps up to three obsolete logs
// for reuse, each with the blocks it ever held: a state of a few MiB then
// occupied hundreds of MiB. Here a log reserves its blocks a chunk at a time
// as it grows, and an obsolete log is deleted.

// walChunk is how far ahead of its end a log file reserves blocks: one
// fallocate call per MiB written keeps most of what preallocation is for
// (the file's extents are allocated in large pieces, not per write), and a
// log file occupies at most this much more than it holds.
const walChunk = 1 << 20

// walFS is a file system whose write-ahead log files reserve their blocks
// walChunk at a time instead of Pebble's MemTableSize-sized preallocation.
// Only the log is preallocated by Pebble, so only its files are affected.
type walFS struct{ vfs.FS }

func (fs walFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return &walFile{File: f}, nil
}

func (fs walFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return &walFile{File: f}, nil
}

// walFile reserves blocks walChunk at a time ahead of its writes. Pebble
// writes a log from one goroutine at a time (its syncing file is not safe
// for concurrent writes either), so the counters need no lock.
type walFile struct {
	vfs.File
	end      int64 // bytes written through Write
	reserved int64 // blocks reserved up to here
	wanted   bool  // Pebble asked for preallocation
}

// Preallocate notes that Pebble wants the file preallocated; Write reserves
// the blocks, a chunk at a time, as the file reaches them.
func (f *walFile) Preallocate(offset, length int64) error {
	f.wanted = true
	return nil
}

func (f *walFile) Write(p []byte) (int, error) {
	if need := f.end + int64(len(p)); f.wanted && need > f.reserved {
		next := (need + walChunk - 1) / walChunk * walChunk
		// Best effort, as in Pebble: a file system without fallocate
		// allocates as the file is written.
		_ = f.File.Preallocate(f.reserved, next-f.reserved)
		f.reserved = next
	}
	n, err := f.File.Write(p)
	f.end += int64(n)
	return n, err
}

// deletingCleaner deletes obsolete files, as Pebble's default cleaner
// does, and stops Pebble from keeping obsolete write-ahead logs for reuse:
// Pebble recycles no log when its cleaner needs the files' contents, which
// ArchiveCleaner declares with an unexported method. Embedded one level
// deeper than DeleteCleaner, it lends that method and nothing else: Clean
// and String are DeleteCleaner's. Reusing a log saves the metadata update
// of an append to a new file on each sync, which a sync per committed
// transaction (every 100 ms by default) hardly notices; the logs it kept
// (up to three) occupied up to a memtable's worth of disk each, idle.
type deletingCleaner struct {
	pebble.DeleteCleaner
	needsContents
}

// needsContents carries ArchiveCleaner's marker method for deletingCleaner.
type needsContents struct{ pebble.ArchiveCleaner }
