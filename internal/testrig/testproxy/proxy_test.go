package testproxy_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/testproxy"
)

// echoServer answers every byte it reads with the same byte, until the
// test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// frame is a Kafka-style request: a 4-byte size, then the API key and a
// body.
func frame(key int16, body string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(2+len(body)))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	return append(b, body...)
}

// dial connects to the echo server through the proxy.
func dial(t *testing.T, p *testproxy.Proxy, target string) net.Conn {
	t.Helper()
	front, err := p.Front(target)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", front)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends a frame and reads its echo within d.
func roundTrip(c net.Conn, f []byte, d time.Duration) error {
	if _, err := c.Write(f); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(d))
	got := make([]byte, len(f))
	_, err := io.ReadFull(c, got)
	if err == nil && string(got) != string(f) {
		err = errors.New("echo differs")
	}
	return err
}

func TestForwardsAndAddsLatency(t *testing.T) {
	target := echoServer(t)
	p := testproxy.New()
	defer p.Close()
	c := dial(t, p, target)
	if err := roundTrip(c, frame(0, "plain"), 5*time.Second); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	const latency = 150 * time.Millisecond
	p.SetLatency(latency)
	began := time.Now()
	if err := roundTrip(c, frame(0, "slow"), 5*time.Second); err != nil {
		t.Fatalf("round trip with latency: %v", err)
	}
	// Once each way: the request to the server and its echo back.
	if took := time.Since(began); took < 2*latency {
		t.Errorf("round trip took %v with %v of latency each way, want at least %v", took, latency, 2*latency)
	}
	p.Heal()
	if err := roundTrip(c, frame(0, "healed"), 5*time.Second); err != nil {
		t.Fatalf("round trip after heal: %v", err)
	}
}

// A hung link forwards nothing, on open and on new connections, and
// delivers what waited once healed.
func TestHangHoldsUntilHeal(t *testing.T) {
	target := echoServer(t)
	p := testproxy.New()
	defer p.Close()
	open := dial(t, p, target)
	if err := roundTrip(open, frame(0, "before"), 5*time.Second); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	p.Hang()
	fresh := dial(t, p, target)
	for name, c := range map[string]net.Conn{"open": open, "new": fresh} {
		if err := roundTrip(c, frame(0, "held"), 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s connection while hung: %v, want a read deadline", name, err)
		}
	}
	p.Heal()
	for name, c := range map[string]net.Conn{"open": open, "new": fresh} {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got := make([]byte, len(frame(0, "held")))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != string(frame(0, "held")) {
			t.Errorf("%s connection after heal: %q, %v; want the held frame", name, got, err)
		}
	}
}

// Reset resets open connections and, until Heal, new ones.
func TestResetResetsOpenAndNewConnections(t *testing.T) {
	target := echoServer(t)
	p := testproxy.New()
	defer p.Close()
	open := dial(t, p, target)
	if err := roundTrip(open, frame(0, "before"), 5*time.Second); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	p.Reset()
	if err := roundTrip(open, frame(0, "after"), 5*time.Second); !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Errorf("open connection after Reset: %v, want a reset", err)
	}
	// On loopback the reset may come before connect returns.
	front, err := p.Front(target)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := net.Dial("tcp", front)
	if err == nil {
		defer fresh.Close()
		err = roundTrip(fresh, frame(0, "new"), 5*time.Second)
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Errorf("new connection while resetting: %v, want a reset", err)
	}
	if n := p.Resets(); n != 2 {
		t.Errorf("%d resets counted, want 2", n)
	}
	p.Heal()
	if err := roundTrip(dial(t, p, target), frame(0, "healed"), 5*time.Second); err != nil {
		t.Errorf("new connection after heal: %v", err)
	}
}

// Blackhole darkens a connection at the first request with a given key:
// earlier requests pass, that one and the rest are swallowed.
func TestBlackholeDarkensAtKey(t *testing.T) {
	target := echoServer(t)
	p := testproxy.New()
	defer p.Close()
	c := dial(t, p, target)
	p.Blackhole(testproxy.KeyEndTxn)
	if err := roundTrip(c, frame(0, "produce"), 5*time.Second); err != nil {
		t.Fatalf("a request of another key: %v", err)
	}
	if err := roundTrip(c, frame(testproxy.KeyEndTxn, "end"), 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("EndTxn while blackholed: %v, want a read deadline", err)
	}
	p.Heal()
	if err := roundTrip(c, frame(0, "produce"), 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a dark connection after heal: %v, want it still dark", err)
	}
	if n := p.Darkened(); n != 1 {
		t.Errorf("%d connections darkened, want 1", n)
	}
	if n := p.Accepted(); n != 1 {
		t.Errorf("%d connections accepted, want 1", n)
	}
}

// A target that refuses the proxy's dial is passed on as a reset, the
// nearest a listening proxy gets to a refusal: a client that saw a clean
// close at once would take it for a TLS or SASL mismatch (franz-go does
// not retry a first-read EOF) instead of a broker that is down.
func TestRefusedTargetResetsClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := testproxy.New()
	defer p.Close()
	front, err := p.Front(target)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", front)
	if err == nil {
		// Read before writing: a clean close is then an EOF, never a
		// reset the kernel sends for data it could not deliver.
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("a connection to a target that refuses: %v, want a reset", err)
	}
}
