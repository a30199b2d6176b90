package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
)

// Topic configs are read as the broker applies them: a topic's own
// max.message.bytes, a config it inherits, and an error for a topic that
// does not exist, which falls back on the broker's message.max.bytes.
func TestAdminReadsTopicConfigs(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := Connect(ctx, Client{Brokers: b.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	limit := "123456"
	if _, err := a.Ensure(map[string]int32{"limited": 1}, map[string]*string{"max.message.bytes": &limit}); err != nil {
		t.Fatal(err)
	}

	if v, ok, err := a.TopicConfig("limited", "max.message.bytes"); err != nil || !ok || v != limit {
		t.Errorf("TopicConfig(limited, max.message.bytes) = %q, %v, %v; want %q, true, nil", v, ok, err, limit)
	}
	if v, ok, err := a.TopicConfig("limited", "cleanup.policy"); err != nil || !ok || v != "delete" {
		t.Errorf("TopicConfig(limited, cleanup.policy) = %q, %v, %v; want the default delete", v, ok, err)
	}
	if _, _, err := a.TopicConfig("absent", "max.message.bytes"); err == nil {
		t.Error("TopicConfig of a topic that does not exist: no error")
	}
	limits, fallback := a.MaxMessageBytes("limited", "absent")
	if limits["limited"] != 123456 {
		t.Errorf("max.message.bytes of limited = %d, want 123456", limits["limited"])
	}
	if len(fallback) != 1 || fallback[0] != "absent" || limits["absent"] <= 0 {
		t.Errorf("fallback %v with limit %d for absent; want [absent] with the broker's message.max.bytes", fallback, limits["absent"])
	}
}
