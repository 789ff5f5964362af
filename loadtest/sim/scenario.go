// Package sim is the mesh simulator: it runs the very same topology code
// (distance tables, placement, demand bonus, scaling) against a scenario of
// viewer arrivals on a virtual clock, at internet scale, and summarises how
// the mesh behaved.
package sim

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/relaymesh/relaymesh/topology/graph"
)

// Limits on a scenario, so a hostile file cannot make the simulator run
// forever or exhaust memory.
const (
	MaxScenarioSize = 4 << 20
	MaxDuration     = 7 * 24 * time.Hour
	MaxTicks        = 1_000_000
	MaxServers      = 100_000
	MaxAudience     = 10_000
	MaxViewers      = 1e9 // per audience entry, after scaling
)

// Scenario describes one simulation run. See loadtest/scenarios/README.md.
type Scenario struct {
	Name           string        `yaml:"name"`
	Duration       time.Duration `yaml:"duration"`        // virtual time simulated
	Tick           time.Duration `yaml:"tick"`            // default 1s
	SampleInterval time.Duration `yaml:"sample_interval"` // relay load reports; default 2s
	RelayStartup   time.Duration `yaml:"relay_startup"`   // open decision → serving; default 5s
	// RelayStartupMax, when above RelayStartup, makes each relay's
	// start-up time uniform in [relay_startup, relay_startup_max].
	RelayStartupMax time.Duration `yaml:"relay_startup_max"`
	StatusTTL       time.Duration `yaml:"status_ttl"` // a relay silent this long is down; default 10s
	TokenTTL        time.Duration `yaml:"token_ttl"`  // sticky assignment lifetime; default 5m
	// ProvisionalTokens: a viewer placed farther than a relay that is
	// starting gets a provisional token and moves once that relay serves
	// (not after the token's lifetime). Default true.
	ProvisionalTokens bool         `yaml:"provisional_tokens"`
	Redirectors       int          `yaml:"redirectors"` // independent placement views, synced at samples; default 1
	Seed              uint64       `yaml:"seed"`
	Graph             yaml.Node    `yaml:"graph"` // a path (relative to the scenario) or an inline graph; default the built-in world
	Primary           PrimarySpec  `yaml:"primary"`
	Pools             []PoolSpec   `yaml:"pools"`
	Streams           []StreamSpec `yaml:"streams"`
	Audience          []Audience   `yaml:"audience"`
	Demand            DemandSpec   `yaml:"demand"`
	Scaling           ScalingSpec  `yaml:"scaling"`
	Failures          []Failure    `yaml:"failures"`
	FanOut            int          `yaml:"fan_out"` // relays of a stream pulling from one server; default 4

	graph   *graph.Graph // resolved, with generated servers
	base    *graph.Graph // without them
	servers []graph.Server
	dir     string
}

// PrimarySpec places the primary server.
type PrimarySpec struct {
	Location        string  `yaml:"location"`
	CapacityViewers int     `yaml:"capacity_viewers"`
	CapacityMbps    float64 `yaml:"capacity_mbps"`
}

// PoolSpec generates Servers identical servers at each of Locations.
type PoolSpec struct {
	Locations       []string   `yaml:"locations"`
	Servers         int        `yaml:"servers"`
	Role            graph.Role `yaml:"role"` // relay (default) or reserve
	CapacityViewers int        `yaml:"capacity_viewers"`
	CapacityMbps    float64    `yaml:"capacity_mbps"`
	Weight          float64    `yaml:"weight"`
}

// StreamSpec is one live stream.
type StreamSpec struct {
	ID          string  `yaml:"id"`
	BitrateMbps float64 `yaml:"bitrate_mbps"`
}

// Audience is the number of concurrent viewers of a stream at a location
// over time: a piecewise-linear curve through the points (0 before the
// first point, the last value after the last).
type Audience struct {
	Stream   string  `yaml:"stream"`
	Location string  `yaml:"location"`
	Curve    []Point `yaml:"curve"`
	// Churn is the share of this audience's viewers that leave per minute
	// and are replaced by as many new ones (placed afresh); 0 = none.
	Churn float64 `yaml:"churn"`
}

// Failure takes servers down at a time: one server (by id, or "busiest":
// the one with the most viewers then) or every server of a region.
type Failure struct {
	At     time.Duration `yaml:"at"`
	Server string        `yaml:"server"`
	Region string        `yaml:"region"`
	For    time.Duration `yaml:"for"` // 0: for good
}

// Point is one point of an audience curve.
type Point struct {
	At      time.Duration `yaml:"at"`
	Viewers float64       `yaml:"viewers"`
}

// DemandSpec sets the demand bonus parameters (zero = the topology
// defaults).
type DemandSpec struct {
	K          float64       `yaml:"k"`
	Threshold  float64       `yaml:"threshold"`
	HalfLife   time.Duration `yaml:"half_life"`
	Floor      float64       `yaml:"floor"`
	DefaultCap int           `yaml:"default_cap"`
}

// ScalingSpec sets the scaling parameters (zero = the topology defaults).
type ScalingSpec struct {
	High         float64       `yaml:"high"`
	Low          float64       `yaml:"low"`
	Hold         time.Duration `yaml:"hold"`
	MinLifetime  time.Duration `yaml:"min_lifetime"`
	Horizon      time.Duration `yaml:"horizon"`
	Window       int           `yaml:"window"`
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	Margin       float64       `yaml:"margin"`
	Settle       time.Duration `yaml:"settle"`
}

// LoadScenario reads a scenario file; a graph path in it is relative to
// the file's directory.
func LoadScenario(path string) (*Scenario, error) {
	data, err := readBounded(path, MaxScenarioSize)
	if err != nil {
		return nil, err
	}
	return ParseScenario(filepath.Base(path), data, filepath.Dir(path))
}

func readBounded(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the limit of %d", path, st.Size(), limit)
	}
	return os.ReadFile(path)
}

// ParseScenario parses and checks a scenario. dir resolves a graph given
// as a path; with dir empty, graph paths are refused.
func ParseScenario(name string, data []byte, dir string) (*Scenario, error) {
	if len(data) > MaxScenarioSize {
		return nil, fmt.Errorf("%s: scenario larger than %d bytes", name, MaxScenarioSize)
	}
	sc := Scenario{ProvisionalTokens: true}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&sc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	sc.dir = dir
	if err := sc.check(name); err != nil {
		return nil, err
	}
	return &sc, nil
}

func (sc *Scenario) check(name string) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: "+format, append([]any{name}, args...)...)
	}
	if sc.Tick == 0 {
		sc.Tick = time.Second
	}
	if sc.SampleInterval == 0 {
		sc.SampleInterval = 2 * time.Second
	}
	if sc.RelayStartup == 0 {
		sc.RelayStartup = 5 * time.Second
	}
	if sc.StatusTTL == 0 {
		sc.StatusTTL = 10 * time.Second
	}
	if sc.FanOut < 0 || sc.FanOut > 1000 {
		return fail("fan_out %d: want 0 to 1000", sc.FanOut)
	}
	if sc.RelayStartupMax != 0 && sc.RelayStartupMax < sc.RelayStartup {
		return fail("relay_startup_max %v below relay_startup %v", sc.RelayStartupMax, sc.RelayStartup)
	}
	if sc.Redirectors == 0 {
		sc.Redirectors = 1
	}
	if sc.Redirectors < 0 || sc.Redirectors > 64 {
		return fail("redirectors %d: want 1 to 64", sc.Redirectors)
	}
	if sc.TokenTTL == 0 {
		sc.TokenTTL = 5 * time.Minute
	}
	switch {
	case sc.Duration <= 0 || sc.Duration > MaxDuration:
		return fail("duration %v must be in (0, %v]", sc.Duration, MaxDuration)
	case sc.Tick < time.Millisecond || sc.Duration/sc.Tick > MaxTicks:
		return fail("tick %v: at least 1ms and at most %d ticks", sc.Tick, MaxTicks)
	case sc.SampleInterval < sc.Tick || sc.RelayStartup < 0 || sc.TokenTTL < sc.Tick:
		return fail("sample_interval and token_ttl must be ≥ tick, relay_startup ≥ 0")
	case len(sc.Streams) == 0:
		return fail("no streams")
	case len(sc.Audience) == 0 || len(sc.Audience) > MaxAudience:
		return fail("audience: want 1 to %d entries", MaxAudience)
	}
	base, err := sc.baseGraph(name)
	if err != nil {
		return err
	}
	streams := map[string]bool{}
	for _, s := range sc.Streams {
		if s.ID == "" || streams[s.ID] || math.IsNaN(s.BitrateMbps) || s.BitrateMbps < 0 || s.BitrateMbps > 1000 {
			return fail("stream %q: empty or duplicate id, or bitrate out of range", s.ID)
		}
		streams[s.ID] = true
	}
	for i, a := range sc.Audience {
		if !streams[a.Stream] {
			return fail("audience %d: unknown stream %q", i+1, a.Stream)
		}
		if _, ok := base.Vertex(a.Location); !ok {
			return fail("audience %d: unknown location %q", i+1, a.Location)
		}
		if math.IsNaN(a.Churn) || a.Churn < 0 || a.Churn > 1 {
			return fail("audience %d: churn %v: want 0 to 1 per minute", i+1, a.Churn)
		}
		if len(a.Curve) == 0 || len(a.Curve) > 10_000 {
			return fail("audience %d: want 1 to 10000 curve points", i+1)
		}
		for j, p := range a.Curve {
			if p.At < 0 || math.IsNaN(p.Viewers) || p.Viewers < 0 || p.Viewers > MaxViewers || (j > 0 && p.At < a.Curve[j-1].At) {
				return fail("audience %d point %d: times must not decrease, viewers in [0, %g]", i+1, j+1, float64(MaxViewers))
			}
		}
	}
	var servers []graph.Server
	if sc.Primary.Location == "" {
		return fail("primary: location required")
	}
	servers = append(servers, graph.Server{ID: "primary", Location: sc.Primary.Location, Role: graph.RolePrimary,
		CapacityViewers: sc.Primary.CapacityViewers, CapacityMbps: sc.Primary.CapacityMbps})
	for i, p := range sc.Pools {
		if p.Servers <= 0 || len(servers)+p.Servers*len(p.Locations) > MaxServers {
			return fail("pool %d: servers must be ≥ 1 and at most %d in all", i+1, MaxServers)
		}
		role := p.Role
		if role == "" {
			role = graph.RoleRelay
		}
		if role != graph.RoleRelay && role != graph.RoleReserve {
			return fail("pool %d: role %q: want relay or reserve", i+1, role)
		}
		for _, loc := range p.Locations {
			for k := range p.Servers {
				servers = append(servers, graph.Server{ID: fmt.Sprintf("%s-%s-%d-%d", loc, role, i+1, k+1), Location: loc, Role: role,
					CapacityViewers: p.CapacityViewers, CapacityMbps: p.CapacityMbps, Weight: p.Weight})
			}
		}
	}
	g, err := base.WithServers(servers...)
	if err != nil {
		return fail("servers: %v", err)
	}
	if len(sc.Failures) > 1000 {
		return fail("failures: at most 1000")
	}
	for i, f := range sc.Failures {
		if f.At < 0 || f.For < 0 || (f.Server == "") == (f.Region == "") {
			return fail("failure %d: want at, for ≥ 0 and one of server or region", i+1)
		}
		if f.Region != "" {
			if v, ok := g.Vertex(f.Region); !ok || g.Region(v) != v {
				return fail("failure %d: %q is not a region", i+1, f.Region)
			}
		}
		if f.Server != "" && f.Server != "busiest" {
			found := false
			for _, s := range g.Servers() {
				found = found || (s.ID == f.Server && s.Role != graph.RolePrimary)
			}
			if !found {
				return fail("failure %d: no relay server %q", i+1, f.Server)
			}
		}
	}
	sc.graph, sc.base, sc.servers = g, base, servers
	return nil
}

func (sc *Scenario) baseGraph(name string) (*graph.Graph, error) {
	n := &sc.Graph
	switch {
	case n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Value == ""):
		return graph.World()
	case n.Kind == yaml.ScalarNode:
		if sc.dir == "" {
			return nil, fmt.Errorf("%s: graph path %q given but no directory to resolve it", name, n.Value)
		}
		p := n.Value
		if !filepath.IsAbs(p) {
			p = filepath.Join(sc.dir, p)
		}
		data, err := readBounded(p, graph.MaxFileSize)
		if err != nil {
			return nil, fmt.Errorf("%s: graph: %w", name, err)
		}
		return buildGraph(filepath.Base(p), data)
	case n.Kind == yaml.MappingNode:
		data, err := yaml.Marshal(n)
		if err != nil {
			return nil, fmt.Errorf("%s: inline graph: %w", name, err)
		}
		return buildGraph(name+" (inline graph)", data)
	}
	return nil, errors.New(name + ": graph: want a path or a mapping")
}

func buildGraph(name string, data []byte) (*graph.Graph, error) {
	f, err := graph.Parse(name, data)
	if err != nil {
		return nil, err
	}
	var b graph.Builder
	b.AddFile(f)
	return b.Build()
}

// scaledGraph is the graph with every server's capacity multiplied by f
// (at least 1 viewer where a capacity is set).
func (sc *Scenario) scaledGraph(f float64) (*graph.Graph, error) {
	srvs := append([]graph.Server(nil), sc.servers...)
	for i := range srvs {
		if c := srvs[i].CapacityViewers; c > 0 {
			srvs[i].CapacityViewers = max(1, int(math.Round(float64(c)*f)))
		}
		srvs[i].CapacityMbps *= f
		srvs[i].HardViewers = 0
	}
	return sc.base.WithServers(srvs...)
}

// GraphWithServers returns the scenario's graph with its generated servers.
func (sc *Scenario) GraphWithServers() *graph.Graph { return sc.graph }

// at evaluates an audience curve at time t.
func (a *Audience) at(t time.Duration) float64 {
	c := a.Curve
	if t < c[0].At {
		return 0
	}
	for i := 1; i < len(c); i++ {
		if t < c[i].At {
			p, q := c[i-1], c[i]
			f := float64(t-p.At) / float64(q.At-p.At)
			return p.Viewers + f*(q.Viewers-p.Viewers)
		}
	}
	return c[len(c)-1].Viewers
}
