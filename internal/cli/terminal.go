package cli

import (
	"io"
	"os"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal: progress bars (redrawn
// with carriage returns) are drawn only there, never into a pipe or a
// log file.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
