package drills

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// The regions of the drill network. Region N's hosts live in 198.18.N.0/24:
// the built-in GeoIP database places 198.18.1.x in Berlin (eu), 198.18.2.x in
// New York (na) and 198.18.3.x in Tokyo (as), so the redirector locates
// viewers by their real source address. Routers are linked over 10.77.x.y.
var Regions = []string{"eu", "na", "as"}

func regionNum(r string) int {
	for i, x := range Regions {
		if x == r {
			return i + 1
		}
	}
	return 0
}

// OneWay is the one-way latency between two regions: 5 ms inside a region,
// 40 ms eu–na, 80 ms eu–as, 150 ms na–as.
func OneWay(a, b string) time.Duration {
	if a == b {
		return 5 * time.Millisecond
	}
	if a > b {
		a, b = b, a
	}
	switch a + "-" + b {
	case "eu-na":
		return 40 * time.Millisecond
	case "as-eu":
		return 80 * time.Millisecond
	case "as-na":
		return 150 * time.Millisecond
	}
	return 100 * time.Millisecond
}

// Net is the drill network: a router namespace per region (its hosts on a
// bridge), the routers linked pairwise, a namespace per host.
type Net struct {
	Lab *Lab
	// Netem: latencies are tc netem qdiscs on the links. Otherwise every
	// service is fronted by a DelayProxy in its host's namespace.
	Netem bool
	// Direct: no latencies at all and no proxies (services listen on their
	// hosts' addresses as with netem): checks the netem mode's wiring on a
	// kernel without sch_netem.
	Direct bool

	ctx     context.Context
	routers map[string]*NS
	mu      sync.Mutex
	hosts   map[string]*Host
	count   map[string]int
	proxies map[string][]*DelayProxy // by host
}

// Host is one machine of the drill network.
type Host struct {
	Name, Region string
	NS           *NS
	Addr         string // its address, 198.18.N.x
}

func linkName(to string) string { return "to-" + to }

// NewNet builds the routers and their links.
func NewNet(ctx context.Context, lab *Lab, netem bool) (*Net, error) {
	n := &Net{Lab: lab, Netem: netem, ctx: ctx, routers: map[string]*NS{}, hosts: map[string]*Host{},
		count: map[string]int{}, proxies: map[string][]*DelayProxy{}}
	for _, r := range Regions {
		rt, err := lab.NS("rt-" + r)
		if err != nil {
			return nil, err
		}
		n.routers[r] = rt
		steps := [][]string{
			{"link", "add", "br0", "type", "bridge"},
			{"link", "set", "br0", "up"},
			{"addr", "add", fmt.Sprintf("198.18.%d.1/24", regionNum(r)), "dev", "br0"},
		}
		for _, s := range steps {
			if err := rt.IP(s...); err != nil {
				return nil, err
			}
		}
		if err := rt.Sysctl("net.ipv4.ip_forward", "1"); err != nil {
			return nil, err
		}
	}
	for i, a := range Regions {
		for _, b := range Regions[i+1:] {
			ra, rb := n.routers[a], n.routers[b]
			if err := Veth(ra, linkName(b), rb, linkName(a)); err != nil {
				return nil, err
			}
			sub := fmt.Sprintf("10.77.%d%d", regionNum(a), regionNum(b))
			if err := ra.IP("addr", "add", sub+".1/24", "dev", linkName(b)); err != nil {
				return nil, err
			}
			if err := rb.IP("addr", "add", sub+".2/24", "dev", linkName(a)); err != nil {
				return nil, err
			}
			if netem {
				d := OneWay(a, b) - OneWay(a, a)
				for _, e := range []struct {
					ns  *NS
					dev string
				}{{ra, linkName(b)}, {rb, linkName(a)}} {
					if err := e.ns.TC("qdisc", "add", "dev", e.dev, "root", "netem", "delay", ms(d)); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	for _, r := range Regions {
		if err := n.routes(r); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
}

// routes (re)installs region r's router's routes to the other regions.
func (n *Net) routes(r string) error {
	rt := n.routers[r]
	for _, o := range Regions {
		if o == r {
			continue
		}
		a, b := r, o
		if regionNum(a) > regionNum(b) {
			a, b = b, a
		}
		sub := fmt.Sprintf("10.77.%d%d", regionNum(a), regionNum(b))
		via := sub + ".2"
		if r == b {
			via = sub + ".1"
		}
		if err := rt.IP("route", "replace", fmt.Sprintf("198.18.%d.0/24", regionNum(o)), "via", via, "dev", linkName(o)); err != nil {
			return err
		}
	}
	return nil
}

// Host adds a host in region r, on its region's bridge.
func (n *Net) Host(r, name string) (*Host, error) {
	rt := n.routers[r]
	if rt == nil {
		return nil, fmt.Errorf("no region %q", r)
	}
	n.mu.Lock()
	n.count[r]++
	k := 9 + n.count[r]
	n.mu.Unlock()
	ns, err := n.Lab.NS(name)
	if err != nil {
		return nil, err
	}
	h := &Host{Name: name, Region: r, NS: ns, Addr: fmt.Sprintf("198.18.%d.%d", regionNum(r), k)}
	port := "h" + strconv.Itoa(k)
	if err := Veth(ns, "eth0", rt, port); err != nil {
		return nil, err
	}
	if err := rt.IP("link", "set", port, "master", "br0"); err != nil {
		return nil, err
	}
	if err := ns.IP("addr", "add", h.Addr+"/24", "dev", "eth0"); err != nil {
		return nil, err
	}
	if err := ns.IP("route", "add", "default", "via", fmt.Sprintf("198.18.%d.1", regionNum(r))); err != nil {
		return nil, err
	}
	if n.Netem {
		half := ms(OneWay(r, r) / 2)
		if err := ns.TC("qdisc", "add", "dev", "eth0", "root", "netem", "delay", half); err != nil {
			return nil, err
		}
		if err := rt.TC("qdisc", "add", "dev", port, "root", "netem", "delay", half); err != nil {
			return nil, err
		}
	}
	n.mu.Lock()
	n.hosts[name] = h
	n.mu.Unlock()
	return h, nil
}

// RegionOf is the region of an address of the drill network ("" if none).
func RegionOf(a net.Addr) string {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return ""
	}
	ip := ap.Addr().Unmap()
	if !ip.Is4() {
		return ""
	}
	b := ip.As4()
	if b[0] != 198 || b[1] != 18 || b[2] < 1 || int(b[2]) > len(Regions) {
		return ""
	}
	return Regions[b[2]-1]
}

// Serve prepares port on h for a service and returns the address the
// service listens on. With netem it is the host's own address; otherwise
// the service listens on loopback and a DelayProxy on the host's address
// gives each client its region's latency.
func (n *Net) Serve(h *Host, port int) (string, error) {
	public := net.JoinHostPort(h.Addr, strconv.Itoa(port))
	if n.Netem || n.Direct {
		return public, nil
	}
	inner := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ln, err := h.NS.Listen(public)
	if err != nil {
		return "", err
	}
	p := &DelayProxy{
		Listener: ln,
		Dial:     func(ctx context.Context) (net.Conn, error) { return h.NS.Dial(ctx, inner) },
		Delay: func(c net.Addr) time.Duration {
			if r := RegionOf(c); r != "" {
				return OneWay(r, h.Region)
			}
			return 0
		},
		Buffer: 512 << 10,
	}
	go func() { _ = p.Serve(n.ctx) }()
	n.mu.Lock()
	n.proxies[h.Name] = append(n.proxies[h.Name], p)
	n.mu.Unlock()
	return inner, nil
}

// Cut takes region r's links to the other regions down: its hosts still
// reach each other, nothing else.
func (n *Net) Cut(r string) error {
	for _, o := range Regions {
		if o == r {
			continue
		}
		if err := n.routers[r].IP("link", "set", linkName(o), "down"); err != nil {
			return err
		}
		if err := n.routers[o].IP("link", "set", linkName(r), "down"); err != nil {
			return err
		}
	}
	return nil
}

// Heal brings region r's links back up with their routes.
func (n *Net) Heal(r string) error {
	for _, o := range Regions {
		if o == r {
			continue
		}
		if err := n.routers[r].IP("link", "set", linkName(o), "up"); err != nil {
			return err
		}
		if err := n.routers[o].IP("link", "set", linkName(r), "up"); err != nil {
			return err
		}
	}
	for _, o := range Regions {
		if err := n.routes(o); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the delay proxies.
func (n *Net) Close() {
	n.mu.Lock()
	all := n.proxies
	n.proxies = map[string][]*DelayProxy{}
	n.mu.Unlock()
	for _, ps := range all {
		for _, p := range ps {
			p.Close()
		}
	}
}
