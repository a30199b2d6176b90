// Package testproxy is a TCP proxy for fault-injection tests of Kafka
// clients. It puts a loopback listener in front of each broker address a
// client dials (Dial routes the client through it, for any broker, the
// embedded one, a real one or a cluster) and forwards bytes both ways until
// told to blackhole: from then on, a connection that sends a request with
// one of the given API keys goes dark. That request and everything after it
// on the connection, both ways, is swallowed, and the connection stays
// open, as with a broker that hangs or a network that drops packets. The
// client sees nothing until its own read deadline.
package testproxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
)

// Kafka API keys a test commonly blackholes.
const (
	KeyFetch            int16 = 1
	KeyInitProducerID   int16 = 22
	KeyAddOffsetsToTxn  int16 = 25
	KeyEndTxn           int16 = 26
	KeyTxnOffsetCommit  int16 = 28
	KeyAddPartitionsTxn int16 = 24
)

// CommitKeys are the requests that end a transaction: a connection that
// sends one while they are blackholed behaves as a hung transaction
// coordinator.
var CommitKeys = []int16{KeyAddOffsetsToTxn, KeyTxnOffsetCommit, KeyEndTxn}

// Proxy routes dials through listeners in front of the targets. The zero
// value is not usable: call New.
type Proxy struct {
	darkened atomic.Int64
	mu       struct {
		sync.Mutex
		keys      []int16                 // requests that darken a connection
		listeners map[string]net.Listener // target → listener in front of it
		conns     map[net.Conn]struct{}
		closed    bool
	}
	wg sync.WaitGroup
}

// New returns a proxy with nothing blackholed.
func New() *Proxy {
	p := &Proxy{}
	p.mu.listeners = map[string]net.Listener{}
	p.mu.conns = map[net.Conn]struct{}{}
	return p
}

// Dial connects to addr through the proxy's listener in front of it
// (started on first use). It has the signature of kafka.Client.Dial.
func (p *Proxy) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	front, err := p.Front(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, network, front)
}

// Front returns the address of the listener in front of target, starting
// it on first use.
func (p *Proxy) Front(target string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return "", errors.New("testproxy: closed")
	}
	if ln, ok := p.mu.listeners[target]; ok {
		return ln.Addr().String(), nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("testproxy: listen: %w", err)
	}
	p.mu.listeners[target] = ln
	p.wg.Add(1)
	go p.accept(ln, target)
	return ln.Addr().String(), nil
}

// Blackhole makes every connection that sends a request with one of keys
// go dark from that request on (until Heal). No keys: every request.
func (p *Proxy) Blackhole(keys ...int16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(keys) == 0 {
		keys = []int16{-1}
	}
	p.mu.keys = slices.Clone(keys)
}

// Heal stops darkening connections. Connections already dark stay dark,
// like a hung peer, until the client closes them.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.keys = nil
}

// Darkened counts the connections that went dark so far.
func (p *Proxy) Darkened() int64 { return p.darkened.Load() }

// Close stops every listener and connection and waits for the proxy's
// goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.mu.closed = true
	for _, ln := range p.mu.listeners {
		ln.Close()
	}
	for c := range p.mu.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// darkens reports whether a request with key darkens its connection.
func (p *Proxy) darkens(key int16) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.mu.keys, key) || slices.Contains(p.mu.keys, -1)
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		c.Close()
		return false
	}
	p.mu.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.mu.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept(ln net.Listener, target string) {
	defer p.wg.Done()
	for {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(client)
			server, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			if !p.track(server) {
				return
			}
			defer p.untrack(server)
			p.pipe(client, server)
		}()
	}
}

// pipe forwards one connection until either side closes it. Requests are
// read frame by frame (a 4-byte size, then the request, whose first two
// bytes are its API key) so that the connection can go dark at the request
// that darkens it; responses are copied as they come, until it is dark.
func (p *Proxy) pipe(client, server net.Conn) {
	var dark atomic.Bool
	done := make(chan struct{}, 2)
	go func() { // broker → client
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 && !dark.Load() {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // client → broker
		defer func() { done <- struct{}{} }()
		var size [4]byte
		for {
			if _, err := io.ReadFull(client, size[:]); err != nil {
				return
			}
			body := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(client, body); err != nil {
				return
			}
			if !dark.Load() && len(body) >= 2 && p.darkens(int16(binary.BigEndian.Uint16(body))) {
				dark.Store(true)
				p.darkened.Add(1)
			}
			if dark.Load() {
				continue // swallowed
			}
			if _, err := server.Write(size[:]); err != nil {
				return
			}
			if _, err := server.Write(body); err != nil {
				return
			}
		}
	}()
	<-done
	// One side ended: end the other. A dark connection ends only when the
	// client gives up on it (or the broker closes it).
	client.Close()
	server.Close()
	<-done
}
