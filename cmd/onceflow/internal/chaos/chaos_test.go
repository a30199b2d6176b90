package chaos_test

import (
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/chaos"
)

// Validate joins every problem at once.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  chaos.Config
		want []string // substrings of the error; none: valid
	}{
		{"embedded", chaos.Config{Embedded: true}, nil},
		{"brokers", chaos.Config{Brokers: []string{"127.0.0.1:9092"}}, nil},
		{"cluster with its brokers", chaos.Config{ClusterDir: "/tmp/c", Brokers: []string{"a:1"}, Faults: []string{"broker-kill"}}, nil},
		{"nowhere", chaos.Config{}, []string{"exactly one of"}},
		{"two places", chaos.Config{Embedded: true, Brokers: []string{"a:1"}}, []string{"exactly one of"}},
		{"broker kill without cluster", chaos.Config{Embedded: true, Faults: []string{"broker-kill", "fire"}},
			[]string{"broker-kill needs a cluster", `unknown fault "fire"`}},
		{"request faults without the embedded broker", chaos.Config{Brokers: []string{"a:1"}, Faults: []string{"request-fault", "network"}},
			[]string{"request-fault needs the embedded broker"}},
		{"intervals", chaos.Config{Embedded: true, MinInterval: 5 * time.Second, MaxInterval: time.Second}, []string{"maximum interval"}},
		{"allstages with operator commands", chaos.Config{Embedded: true, Topology: chaos.TopologyAllStages, Faults: []string{"operator-command"}}, nil},
		{"operator commands need allstages", chaos.Config{Embedded: true, Topology: "pageviews", Faults: []string{"operator-command"}},
			[]string{`unknown topology "pageviews"`, "operator-command needs the allstages topology"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
