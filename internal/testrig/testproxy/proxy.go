// Package testproxy is a TCP proxy for fault-injection tests of Kafka
// clients. It puts a loopback listener in front of each broker address a
// client dials (Dial routes the client through it, for any broker, the
// embedded one, a real one or a cluster) and forwards bytes both ways. On
// command it injects network faults, each until Heal:
//
//   - Blackhole(keys...): a connection that sends a request with one of the
//     given API keys goes dark. That request and everything after it on
//     the connection, both ways, is swallowed, and the connection stays
//     open, as with a broker that hangs. The client sees nothing until its
//     own read deadline.
//   - Hang: nothing is forwarded on any connection, open or new, both
//     ways; bytes wait in the proxy and in the kernel's buffers, as over a
//     network that drops every packet. Heal delivers what waited, late, as
//     TCP would once the network is back.
//   - SetLatency: every chunk of bytes is forwarded that much later, both
//     ways (throughput is not capped: chunks in flight overlap).
//   - Reset: every open connection is closed with a TCP reset, and new
//     ones are reset as they arrive.
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
	"time"
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
	resets   atomic.Int64
	accepted atomic.Int64
	mu       struct {
		sync.Mutex
		keys      []int16                 // requests that darken a connection
		latency   time.Duration           // added to every chunk forwarded
		hung      chan struct{}           // non-nil while hung; closed by Heal
		resetting bool                    // new connections are reset
		listeners map[string]net.Listener // target → listener in front of it
		links     map[*link]struct{}
		closed    bool
	}
	wg sync.WaitGroup
}

// link is one proxied connection: the client's and the broker's side.
type link struct {
	client, server net.Conn
	stop           chan struct{} // closed when the link ends
	once           sync.Once
}

// close ends the link; with reset, the client sees a TCP reset.
func (l *link) close(reset bool) {
	l.once.Do(func() {
		if reset {
			setLingerZero(l.client)
		}
		l.client.Close()
		l.server.Close()
		close(l.stop)
	})
}

// setLingerZero makes the next Close send a TCP reset instead of a FIN.
func setLingerZero(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}

// New returns a proxy with no fault.
func New() *Proxy {
	p := &Proxy{}
	p.mu.listeners = map[string]net.Listener{}
	p.mu.links = map[*link]struct{}{}
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

// Hang stops forwarding on every connection, open or new, both ways,
// until Heal.
func (p *Proxy) Hang() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.hung == nil {
		p.mu.hung = make(chan struct{})
	}
}

// SetLatency delays every chunk forwarded from now on by d, both ways,
// until Heal (or another SetLatency).
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.latency = d
}

// Reset closes every open connection with a TCP reset and, until Heal,
// resets new connections as they arrive.
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.mu.resetting = true
	links := make([]*link, 0, len(p.mu.links))
	for l := range p.mu.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close(true)
		p.resets.Add(1)
	}
}

// Heal ends every fault: latency and resets stop, hung connections
// forward what waited. Connections already dark (Blackhole) stay dark,
// like a hung peer, until the client closes them.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.keys = nil
	p.mu.latency = 0
	p.mu.resetting = false
	if p.mu.hung != nil {
		close(p.mu.hung)
		p.mu.hung = nil
	}
}

// Darkened counts the connections that went dark so far.
func (p *Proxy) Darkened() int64 { return p.darkened.Load() }

// Accepted counts the connections the proxy accepted so far.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Resets counts the connections reset so far (open ones by Reset, new
// ones while resetting).
func (p *Proxy) Resets() int64 { return p.resets.Load() }

// Close stops every listener and connection and waits for the proxy's
// goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.mu.closed = true
	for _, ln := range p.mu.listeners {
		ln.Close()
	}
	links := make([]*link, 0, len(p.mu.links))
	for l := range p.mu.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close(false)
	}
	p.wg.Wait()
}

// darkens reports whether a request with key darkens its connection.
func (p *Proxy) darkens(key int16) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.mu.keys, key) || slices.Contains(p.mu.keys, -1)
}

// latency is the delay to add to a chunk read now.
func (p *Proxy) latency() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.latency
}

// waitUnhung returns once the proxy is not hung, or false when stop
// closes first.
func (p *Proxy) waitUnhung(stop <-chan struct{}) bool {
	for {
		p.mu.Lock()
		hung := p.mu.hung
		p.mu.Unlock()
		if hung == nil {
			return true
		}
		select {
		case <-hung:
		case <-stop:
			return false
		}
	}
}

// admit registers a new link, or reports false when the proxy is closed
// or resetting (the caller then closes it, with a reset if resetting).
func (p *Proxy) admit(l *link) (ok, reset bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.mu.closed:
		return false, false
	case p.mu.resetting:
		return false, true
	}
	p.mu.links[l] = struct{}{}
	return true, false
}

func (p *Proxy) forget(l *link) {
	p.mu.Lock()
	delete(p.mu.links, l)
	p.mu.Unlock()
}

func (p *Proxy) accept(ln net.Listener, target string) {
	defer p.wg.Done()
	for {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			server, err := net.Dial("tcp", target)
			if err != nil {
				// As close as a proxy gets to the target's refusal.
				setLingerZero(client)
				client.Close()
				return
			}
			l := &link{client: client, server: server, stop: make(chan struct{})}
			if ok, reset := p.admit(l); !ok {
				if reset {
					p.resets.Add(1)
				}
				l.close(reset)
				return
			}
			defer p.forget(l)
			p.pipe(l)
		}()
	}
}

// chunk is bytes read from one side, to be written to the other once due.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe forwards one link until either side closes it, a fault resets it or
// the proxy closes. Requests are read frame by frame (a 4-byte size, then
// the request, whose first two bytes are its API key) so that the
// connection can go dark at the request that darkens it; responses are
// copied as they come, until it is dark.
func (p *Proxy) pipe(l *link) {
	var dark atomic.Bool
	requests, responses := make(chan chunk, 16), make(chan chunk, 16)
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { // client → proxy, a request at a time
		defer wg.Done()
		defer close(requests)
		var size [4]byte
		for {
			if _, err := io.ReadFull(l.client, size[:]); err != nil {
				return
			}
			frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
			copy(frame, size[:])
			if _, err := io.ReadFull(l.client, frame[4:]); err != nil {
				return
			}
			if !dark.Load() && len(frame) >= 6 && p.darkens(int16(binary.BigEndian.Uint16(frame[4:]))) {
				dark.Store(true)
				p.darkened.Add(1)
			}
			if dark.Load() {
				continue // swallowed
			}
			if !p.queue(requests, frame, l.stop) {
				return
			}
		}
	}()
	go func() { // broker → proxy
		defer wg.Done()
		defer close(responses)
		for {
			buf := make([]byte, 32<<10)
			n, err := l.server.Read(buf)
			if n > 0 && !dark.Load() && !p.queue(responses, buf[:n], l.stop) {
				return
			}
			if err != nil {
				return
			}
		}
	}()
	// A writer that ends (its queue drained after the reader's end, or a
	// write failed) ends the link: the other side's reader fails too. A
	// dark connection ends only when the client gives up on it (or the
	// broker closes it).
	go func() { defer wg.Done(); p.drain(requests, l.server, l.stop); l.close(false) }()
	go func() { defer wg.Done(); p.drain(responses, l.client, l.stop); l.close(false) }()
	wg.Wait()
}

// queue hands data to the writer, stamped with its due time.
func (p *Proxy) queue(q chan<- chunk, data []byte, stop <-chan struct{}) bool {
	c := chunk{data: data}
	if d := p.latency(); d > 0 {
		c.due = time.Now().Add(d)
	}
	select {
	case q <- c:
		return true
	case <-stop:
		return false
	}
}

// drain writes the queued chunks to dst, each once due and once the proxy
// is not hung, until the queue closes or the link stops.
func (p *Proxy) drain(q <-chan chunk, dst net.Conn, stop <-chan struct{}) {
	for c := range q {
		if wait := time.Until(c.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
				return
			}
		}
		if !p.waitUnhung(stop) {
			return
		}
		if _, err := dst.Write(c.data); err != nil {
			return
		}
	}
}
