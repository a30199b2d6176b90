package app_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// A bad command line or a bad topology ends at once with exit 2 and a
// message naming the program and the problem; no replica starts (no
// broker is reachable at the address given, so one that started would
// hang in its probe instead of failing fast on the command line).
func TestBadCommandLinesFailFast(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	// A topology with a stage whose function is nil: invalid.
	bad := topology.New("bad")
	topology.To(topology.MapValues[string, string, string](topology.Source(bad, "in", serde.String(), serde.String()), nil), "out", serde.String(), serde.String())
	good := app.Config{Name: "team", Topologies: []*topology.Topology{lengths()}}
	cases := []struct {
		name string
		c    app.Config
		args []string
		want string
	}{
		{"unknown flag", good, []string{"run", "-b", "127.0.0.1:1", "--instance-id", "r1", "--bogus"}, "bogus"},
		{"no instance id", good, []string{"run", "-b", "127.0.0.1:1"}, "instance-id"},
		{"bad guarantee", good, []string{"run", "-b", "127.0.0.1:1", "--instance-id", "r1", "--guarantee", "maybe"}, "guarantee"},
		{"unknown topology", good, []string{"run", "-b", "127.0.0.1:1", "--instance-id", "r1", "nope"}, "nope"},
		{"invalid topology", app.Config{Name: "team", Topologies: []*topology.Topology{bad}}, []string{"run", "-b", "127.0.0.1:1", "--instance-id", "r1"}, "nil"},
		{"no topology", app.Config{Name: "team"}, []string{"run", "-b", "127.0.0.1:1", "--instance-id", "r1"}, "topolog"},
		{"bad commit interval", good, []string{"run", "-b", "127.0.0.1:1", "--instance-id", "r1", "--commit-interval=-1s"}, "commit"},
		{"metrics address in use", good, []string{"run", "-b", "127.0.0.1:1", "--instance-id", "r1", "--metrics-addr", busy.Addr().String()}, "metrics address"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			code, _, stderr := runApp(ctx, c.c, c.args...)
			took := time.Since(start)
			t.Logf("exit %d after %v: %s", code, took.Round(time.Millisecond), strings.TrimSpace(stderr))
			if code != 2 || !strings.Contains(strings.ToLower(stderr), c.want) || took > 5*time.Second {
				t.Errorf("exit %d after %v, stderr %q: want exit 2 at once, naming %q", code, took, stderr, c.want)
			}
		})
	}
}
