//go:build kafka

package serde_test

import (
	"encoding/hex"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/serde"
)

// TestJavaCompat runs the golden vectors through Kafka's own serdes (the
// kafka-clients jar scripts/kafka.sh caches): what Java writes must be the
// golden bytes and decode in Go to the value, and what Go writes must
// decode in Java to the value. ONCEFLOW_KAFKA_LIBS names the jar
// directory (default: .cache/kafka/*/libs).
func TestJavaCompat(t *testing.T) {
	libs := javaLibs(t)
	var args, want []string
	add := func(javaType, value string, golden string, goWire []byte) {
		args = append(args, "ser:"+javaType+":"+value, "de:"+javaType+":"+hex.EncodeToString(goWire))
		want = append(want, golden, value)
	}
	for _, tc := range int32Cases {
		b, _ := serde.Int32().Encode(tc.value)
		add("int", strconv.Itoa(int(tc.value)), tc.wire, b)
	}
	for _, tc := range int16Cases {
		b, _ := serde.Int16().Encode(tc.value)
		add("short", strconv.Itoa(int(tc.value)), tc.wire, b)
	}
	for _, v := range []int64{0, 1, -1, 256, math.MaxInt64, math.MinInt64} {
		b, _ := serde.Int64().Encode(v)
		add("long", strconv.FormatInt(v, 10), hex.EncodeToString(b), b)
	}
	for _, tc := range float64Cases {
		b, _ := serde.Float64().Encode(tc.value)
		add("double", strconv.FormatUint(math.Float64bits(tc.value), 16), tc.wire, b)
	}
	for _, tc := range float32Cases {
		b, _ := serde.Float32().Encode(tc.value)
		add("float", strconv.FormatUint(uint64(math.Float32bits(tc.value)), 16), tc.wire, b)
	}
	for _, tc := range uuidCases {
		b, _ := serde.UUID().Encode(tc.value)
		add("uuid", string(b), tc.wire, b)
	}
	for _, s := range []string{"", "order-42", "żółw 🐢"} {
		b, _ := serde.String().Encode(s)
		add("string", s, hex.EncodeToString(b), b)
	}
	// Java writes every double NaN canonically, keeps float NaN payloads.
	args = append(args, "ser:double:7ff8000000000001", "ser:float:7fc00001")
	want = append(want, "7ff8000000000000", "7fc00001")

	cmd := exec.Command("java", append([]string{"-cp", filepath.Join(libs, "*"), filepath.Join("testdata", "java", "Serdes.java")}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("java: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("java printed %d lines for %d arguments:\n%s", len(got), len(want), out)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: Java says %q, want %q", args[i], got[i], want[i])
		}
	}
	t.Logf("%d vectors checked against Kafka's serdes", len(want))
}

func javaLibs(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("no java on PATH")
	}
	if d := os.Getenv("ONCEFLOW_KAFKA_LIBS"); d != "" {
		return d
	}
	jars, _ := filepath.Glob(filepath.Join("..", ".cache", "kafka", "*", "libs", "kafka-clients-*.jar"))
	if len(jars) == 0 {
		t.Skip("no kafka-clients jar in .cache/kafka/*/libs: run scripts/kafka.sh up once")
	}
	return filepath.Dir(jars[len(jars)-1])
}
