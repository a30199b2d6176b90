package statestore

import (
	"fmt"

	"github.com/hashicorp/go-hclog"
)

// pebbleLogger routes Pebble's printf-style logging to an hclog.Logger.
type pebbleLogger struct{ log hclog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Info("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error("pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf is called by Pebble on a broken invariant (on-disk corruption, a bug)
// and must not return: Pebble's own default exits the process. Panicking
// instead logs first and still runs deferred functions.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := "pebble: " + fmt.Sprintf(format, args...)
	l.log.Error(msg)
	panic(msg)
}
