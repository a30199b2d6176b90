package clientcfg_test

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
)

func TestParseBrokers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a:1", []string{"a:1"}},
		{" a:1, b:2 ,,", []string{"a:1", "b:2"}},
	} {
		if got := clientcfg.ParseBrokers(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseBrokers(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestProbeUnreachable(t *testing.T) {
	// A port that was free a moment ago: connections are refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	brokers := []string{addr}
	cl, err := kgo.NewClient(clientcfg.Options(brokers, "test", hclog.NewNullLogger())...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	began := time.Now()
	err = clientcfg.Probe(ctx, cl, brokers)
	if !errors.Is(err, clientcfg.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("error %q should name %s and the cause", err, addr)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("probe took %s with a 1s context", d)
	}
}
