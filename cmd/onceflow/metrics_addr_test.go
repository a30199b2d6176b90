package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A replica given only a port serves metrics and health on loopback, not
// on every interface; given no --metrics-addr, it serves nothing.
func TestMetricsListenOnLoopback(t *testing.T) {
	brokers := startBroker(t)
	for _, tc := range []struct {
		name string
		args []string
		want string // the served address's pattern; "" for none
	}{
		{"a port alone", []string{"--metrics-addr", ":0"}, `^127\.0\.0\.1:[0-9]+$`},
		{"no address", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var out, errb syncBuffer
			done := make(chan int)
			args := append([]string{"--log-level", "info", "run", "copy", "-b", brokers, "--input", "in", "--output", "out",
				"--app-id", "m", "--instance-id", "r1"}, tc.args...)
			go func() { done <- run(ctx, args, &out, &errb) }()
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(errb.String(), "replica starting") {
				if time.Now().After(deadline) {
					cancel()
					<-done
					t.Fatalf("the replica did not start: %s", errb.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			<-done
			m := regexp.MustCompile(`serving: addr=(\S+)`).FindStringSubmatch(errb.String())
			switch {
			case tc.want == "" && m != nil:
				t.Errorf("served on %s without --metrics-addr", m[1])
			case tc.want != "" && (m == nil || !regexp.MustCompile(tc.want).MatchString(m[1])):
				t.Errorf("served on %v, want %s; stderr:\n%s", m, tc.want, errb.String())
			}
		})
	}
}
