package chaos

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/onceflow/onceflow/internal/testrig/testproxy"
)

// The modes of a network fault between one replica and one broker.
const (
	NetLatency = "latency" // every chunk forwarded late, both ways
	NetHang    = "hang"    // nothing forwarded; what waited arrives after
	NetReset   = "reset"   // connections reset, open and new
)

var netModes = []string{NetLatency, NetHang, NetReset}

// Bounds of one network fault.
const (
	netMinFault   = 3 * time.Second
	netMaxFault   = 15 * time.Second
	netMinLatency = 50 * time.Millisecond
	netMaxLatency = 1500 * time.Millisecond
)

// broker is one broker of the run: its id and advertised address.
type broker struct {
	id   int32
	addr string
}

// network puts a proxy (testproxy) between each replica and each broker:
// links[replica][broker] is that pair's proxy. A replica is told (with
// the hidden flag --dial-via of run) to reach each broker's advertised
// address through its own listener.
type network struct {
	brokers []broker
	links   map[string]map[int32]*testproxy.Proxy
}

// listBrokers returns the brokers of the cluster, from metadata.
func listBrokers(ctx context.Context, adm *kadm.Client) ([]broker, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("chaos: broker metadata: %w", err)
	}
	var out []broker
	for _, b := range m.Brokers {
		out = append(out, broker{id: b.NodeID, addr: net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

func newNetwork(brokers []broker) *network {
	return &network{brokers: brokers, links: map[string]map[int32]*testproxy.Proxy{}}
}

// dialVia starts the proxies of replica name, one per broker, and returns
// the replica's --dial-via value (broker=proxy;...).
func (n *network) dialVia(name string) (string, error) {
	n.links[name] = map[int32]*testproxy.Proxy{}
	var via []string
	for _, b := range n.brokers {
		p := testproxy.New()
		front, err := p.Front(b.addr)
		if err != nil {
			p.Close()
			return "", fmt.Errorf("chaos: proxy of %s to broker %d: %w", name, b.id, err)
		}
		n.links[name][b.id] = p
		via = append(via, b.addr+"="+front)
	}
	return strings.Join(via, ";"), nil
}

// accepted counts the connections the replicas opened through the
// proxies.
func (n *network) accepted() int64 {
	var a int64
	for _, links := range n.links {
		for _, p := range links {
			a += p.Accepted()
		}
	}
	return a
}

// close stops every proxy.
func (n *network) close() {
	for _, links := range n.links {
		for _, p := range links {
			p.Close()
		}
	}
}

// netFault injects one network fault between a replica and a broker, at
// random: latency, a hang or resets, for 3 to 15 s, then heals the link.
func (r *runner) netFault(ctx context.Context, f *Fault) error {
	rep := r.reps[r.rnd.IntN(len(r.reps))]
	b := r.net.brokers[r.rnd.IntN(len(r.net.brokers))]
	link := r.net.links[rep.Name][b.id]
	mode := netModes[r.rnd.IntN(len(netModes))]
	d := netMinFault + time.Duration(r.rnd.Int64N(int64(netMaxFault-netMinFault)))
	note := ""
	switch mode {
	case NetLatency:
		lat := netMinLatency + time.Duration(r.rnd.Int64N(int64(netMaxLatency-netMinLatency)))
		link.SetLatency(lat)
		note = fmt.Sprintf("%v each way", lat.Round(time.Millisecond))
	case NetHang:
		link.Hang()
		note = "nothing forwarded, then delivered late"
	case NetReset:
		link.Reset()
		note = "open and new connections reset"
	}
	err := sleep(ctx, d)
	link.Heal()
	r.res.NetworkFaults++
	if r.res.NetworkFaultsByMode == nil {
		r.res.NetworkFaultsByMode = map[string]int{}
	}
	r.res.NetworkFaultsByMode[mode]++
	f.Target = fmt.Sprintf("%s <-> broker %d", rep.Name, b.id)
	f.Note = fmt.Sprintf("%s for %.1fs (%s)", mode, d.Seconds(), note)
	return err
}
