package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// SignalContext returns a context that ends on the first SIGINT or
// SIGTERM (what Kubernetes sends): a replica then commits or aborts its
// open transaction and leaves its group, within its stop bound. A second
// signal exits the process at once with ExitError, saying so on stderr,
// for an operator who will not wait. stop releases the signals.
func SignalContext(name string, stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sig:
			fmt.Fprintf(stderr, "%s: second signal (%v): exiting without a clean stop\n", name, s)
			os.Exit(ExitError)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		cancel()
	}
}
