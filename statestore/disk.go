package statestore

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// diskBytes is what the files and directories under dir occupy on disk:
// the blocks allocated to them, as du counts them, not their lengths. A
// file's blocks can exceed its length (space reserved ahead of its end) or
// fall short of it (a sparse file). A file removed during the walk, as
// Pebble removes obsolete ones, is skipped.
func diskBytes(dir string) (uint64, error) {
	var total uint64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != dir && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		total += allocated(info)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("statestore: disk bytes of %q: %w", dir, err)
	}
	return total, nil
}
