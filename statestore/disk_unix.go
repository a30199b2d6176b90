//go:build unix

package statestore

import (
	"io/fs"
	"syscall"
)

// allocated is the bytes of the blocks allocated to a file: its stat's
// 512-byte block count, as du reads it.
func allocated(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Blocks) * 512
	}
	return uint64(info.Size())
}
