package drills

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/relaymesh/relaymesh/topology/redirector"
)

// Ports every host uses for its service (each host has its own address).
const (
	portRTMP    = 1935
	portHTTP    = 8080
	portNATS    = 4222
	portRoute   = 6222
	portControl = 8090
)

// Stream is the drills' stream; StreamB a second one some drills start.
const (
	Stream  = "live/drill"
	StreamB = "live/drill-b"
)

// MeshConfig says what to run.
type MeshConfig struct {
	Bin  string // the relaymesh binary
	Self string // this test binary (re-executed as a NATS node)
	Dir  string // logs, graph, NATS stores
	// Threshold is the orchestrators' demand threshold (low, so relays open
	// after a few viewers).
	Threshold float64
}

// Mesh is the running mesh: the NATS cluster, two orchestrators, a primary,
// a relay in each region, a broadcaster, and a viewer host per region.
type Mesh struct {
	Net   *Net
	Cfg   MeshConfig
	Hosts map[string]*Host
	Procs map[string]*Proc
	Pub   *Publisher
	// NATSURLs are the cluster's client URLs, as the mesh's processes use them.
	NATSURLs string
}

// Layout: host name → region. Viewer hosts are view-<region>.
var layout = []struct{ name, region string }{
	{"primary", "eu"}, {"relay-eu", "eu"}, {"nats-eu", "eu"}, {"orch-eu", "eu"}, {"pub", "eu"}, {"view-eu", "eu"},
	{"relay-na", "na"}, {"nats-na", "na"}, {"orch-na", "na"}, {"view-na", "na"},
	{"relay-as", "as"}, {"nats-as", "as"}, {"view-as", "as"},
}

// Relays of the mesh by region.
func RelayOf(region string) string { return "relay-" + region }

// StartMesh builds the hosts and starts every process, returning once the
// orchestrators see every relay up and the stream is live on the primary.
func StartMesh(ctx context.Context, n *Net, cfg MeshConfig) (*Mesh, error) {
	m := &Mesh{Net: n, Cfg: cfg, Hosts: map[string]*Host{}, Procs: map[string]*Proc{}}
	for _, l := range layout {
		h, err := n.Host(l.region, l.name)
		if err != nil {
			return m, err
		}
		m.Hosts[l.name] = h
	}
	var urls []string
	for _, r := range Regions {
		urls = append(urls, fmt.Sprintf("nats://%s:%d", m.Hosts["nats-"+r].Addr, portNATS))
	}
	m.NATSURLs = strings.Join(urls, ",")
	if err := m.startNATS(); err != nil {
		return m, err
	}
	if err := m.writeGraph(); err != nil {
		return m, err
	}
	if err := m.startNodes(); err != nil {
		return m, err
	}
	for _, id := range []string{"orch-eu", "orch-na"} {
		if err := m.startOrchestrator(id); err != nil {
			return m, err
		}
	}
	m.Pub = m.Publisher(Stream)
	m.Pub.Start(ctx)
	if err := waitFor(ctx, 60*time.Second, "stream live on the primary", func() bool {
		return m.live("primary")
	}); err != nil {
		return m, err
	}
	var last string
	if err := waitFor(ctx, 60*time.Second, "every relay up at both redirectors", func() bool {
		for _, o := range []string{"orch-eu", "orch-na"} {
			mv, err := m.MeshView(o)
			if err != nil {
				last = fmt.Sprintf("%s: %v", o, err)
				return false
			}
			for _, r := range mv.Relays {
				if r.Status != "up" {
					last = fmt.Sprintf("%s: %s is %s", o, r.ID, r.Status)
					return false
				}
			}
		}
		return true
	}); err != nil {
		return m, fmt.Errorf("%w (last: %s)", err, last)
	}
	return m, nil
}

func (m *Mesh) proc(name string, host *Host, path string, args ...string) *Proc {
	p := &Proc{Name: name, Host: host, Path: path, Args: args, Log: filepath.Join(m.Cfg.Dir, name+".log")}
	m.Procs[name] = p
	return p
}

func (m *Mesh) startNATS() error {
	for _, r := range Regions {
		h := m.Hosts["nats-"+r]
		listen, err := m.Net.Serve(h, portNATS)
		if err != nil {
			return err
		}
		cluster, err := m.Net.Serve(h, portRoute)
		if err != nil {
			return err
		}
		var routes []string
		for _, o := range Regions {
			if o != r {
				routes = append(routes, fmt.Sprintf("nats-route://%s:%d", m.Hosts["nats-"+o].Addr, portRoute))
			}
		}
		js, _ := json.Marshal(NATSNode{Name: h.Name, Listen: listen, Advertise: fmt.Sprintf("%s:%d", h.Addr, portNATS),
			ClusterListen: cluster, ClusterAdvertise: fmt.Sprintf("%s:%d", h.Addr, portRoute), Routes: routes,
			StoreDir: filepath.Join(m.Cfg.Dir, h.Name+"-store")})
		p := m.proc(h.Name, h, m.Cfg.Self, "-test.run=^$")
		p.Env = []string{NATSRoleEnv + "=" + string(js)}
		if err := p.Start(); err != nil {
			return err
		}
	}
	// Ready when each node's monitoring-free client port answers with INFO.
	return waitFor(context.Background(), 30*time.Second, "NATS cluster up", func() bool {
		for _, r := range Regions {
			if !m.natsAnswers(m.Hosts["nats-"+r]) {
				return false
			}
		}
		return true
	})
}

func (m *Mesh) natsAnswers(h *Host) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := h.NS.Dial(ctx, fmt.Sprintf("%s:%d", h.Addr, portNATS))
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "INFO")
}

func (m *Mesh) writeGraph() error {
	var b strings.Builder
	b.WriteString(`locations:
  - {id: eu, name: "Europe", lat: 50.11, lon: 8.68, match: [{continent: EU}]}
  - {id: na, name: "North America", lat: 39.04, lon: -77.49, match: [{continent: NA}]}
  - {id: as, name: "Asia", lat: 35.68, lon: 139.69, match: [{continent: AS}]}
  - {id: origin, name: "Origin (no viewers)", parent: eu, lat: 50.11, lon: 8.68}
links:
  - {from: origin, to: eu, cost: 1, symmetric: true}
  - {from: eu, to: na, cost: 8.55, symmetric: true}
  - {from: eu, to: as, cost: 12.26, symmetric: true}
  - {from: na, to: as, cost: 15.6, symmetric: true}
servers:
`)
	srv := func(id, loc, role string) {
		a := m.Hosts[id].Addr
		fmt.Fprintf(&b, "  - {id: %s, location: %s, role: %s, rtmp: \"%s:%d\", http: \"%s:%d\", capacity_viewers: 2000, capacity_mbps: 2000}\n",
			id, loc, role, a, portRTMP, a, portHTTP)
	}
	// The primary sits at an origin of its own: eu viewers are served by
	// relay-eu, as the others by their region's relay.
	srv("primary", "origin", "primary")
	for _, r := range Regions {
		srv(RelayOf(r), r, "relay")
	}
	return os.WriteFile(filepath.Join(m.Cfg.Dir, "graph.yaml"), []byte(b.String()), 0o644)
}

// nodeArgs are the listen and advertise flags of a primary or relay.
func (m *Mesh) nodeArgs(h *Host) ([]string, error) {
	rtmpL, err := m.Net.Serve(h, portRTMP)
	if err != nil {
		return nil, err
	}
	httpL, err := m.Net.Serve(h, portHTTP)
	if err != nil {
		return nil, err
	}
	return []string{"--rtmp", rtmpL, "--http", httpL,
		"--advertise-rtmp", fmt.Sprintf("%s:%d", h.Addr, portRTMP), "--advertise-http", fmt.Sprintf("%s:%d", h.Addr, portHTTP),
		"--nats", m.NATSURLs, "--steering-url", m.steeringURL(h), "--log-level", "info"}, nil
}

// steeringURL is the redirector a node's playlists name as their content
// steering server: the orchestrator of the node's region, else orch-eu.
func (m *Mesh) steeringURL(h *Host) string {
	o := m.Hosts["orch-"+h.Region]
	if o == nil {
		o = m.Hosts["orch-eu"]
	}
	return fmt.Sprintf("http://%s:%d", o.Addr, portControl)
}

func (m *Mesh) startNodes() error {
	h := m.Hosts["primary"]
	args, err := m.nodeArgs(h)
	if err != nil {
		return err
	}
	p := m.proc("primary", h, m.Cfg.Bin, append([]string{"primary", "--open", "--id", "primary", "--location", "eu"}, args...)...)
	if err := p.Start(); err != nil {
		return err
	}
	upstream := fmt.Sprintf("rtmp://%s:%d", h.Addr, portRTMP)
	for _, r := range Regions {
		id := RelayOf(r)
		rh := m.Hosts[id]
		args, err := m.nodeArgs(rh)
		if err != nil {
			return err
		}
		p := m.proc(id, rh, m.Cfg.Bin, append([]string{"relay", "--id", id, "--location", r, "--upstream", upstream}, args...)...)
		if err := p.Start(); err != nil {
			return err
		}
	}
	return waitFor(context.Background(), 30*time.Second, "primary and relays healthy", func() bool {
		for _, id := range []string{"primary", "relay-eu", "relay-na", "relay-as"} {
			if !m.healthy(id) {
				return false
			}
		}
		return true
	})
}

func (m *Mesh) startOrchestrator(id string) error {
	h := m.Hosts[id]
	// The redirector listens on the host's own address, not behind a delay
	// proxy: it locates viewers by their source address, which a proxy hides.
	p := m.proc(id, h, m.Cfg.Bin, "orchestrator", "--nats", m.NATSURLs, "--graph", filepath.Join(m.Cfg.Dir, "graph.yaml"),
		"--http", fmt.Sprintf("%s:%d", h.Addr, portControl), "--id", id, "--token-secret", "drills",
		"--threshold", strconv.FormatFloat(m.Cfg.Threshold, 'f', -1, 64), "--log-level", "info")
	if err := p.Start(); err != nil {
		return err
	}
	return waitFor(context.Background(), 30*time.Second, id+" answering", func() bool {
		_, err := m.MeshView(id)
		return err == nil
	})
}

// RestartOrchestrator starts a killed orchestrator again.
func (m *Mesh) RestartOrchestrator(id string) error {
	if err := m.Procs[id].Start(); err != nil {
		return err
	}
	return waitFor(context.Background(), 30*time.Second, id+" answering", func() bool {
		_, err := m.MeshView(id)
		return err == nil
	})
}

// Restart starts a killed primary or relay again and waits for /healthz.
func (m *Mesh) Restart(id string) error {
	if err := m.Procs[id].Start(); err != nil {
		return err
	}
	return waitFor(context.Background(), 30*time.Second, id+" healthy", func() bool { return m.healthy(id) })
}

// Publisher is a broadcaster of stream to the primary (not started).
func (m *Mesh) Publisher(stream string) *Publisher {
	return &Publisher{Host: m.Hosts["pub"], URL: fmt.Sprintf("rtmp://%s:%d/%s", m.Hosts["primary"].Addr, portRTMP, stream),
		Log: filepath.Join(m.Cfg.Dir, "ffmpeg-"+strings.ReplaceAll(stream, "/", "-")+".log")}
}

// Close stops every process (the namespaces go with the lab).
func (m *Mesh) Close() {
	if m.Pub != nil {
		m.Pub.Stop()
	}
	var wg sync.WaitGroup
	for _, p := range m.Procs {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop(5 * time.Second) }()
	}
	wg.Wait()
}

// inner is the address the harness uses for host h's service on port: the
// loopback listener behind the proxy, or the host's address with netem.
func (m *Mesh) inner(h *Host, port int) string {
	if m.Net.Netem || m.Net.Direct || port == portControl {
		return fmt.Sprintf("%s:%d", h.Addr, port)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// get fetches path from host id's service on port, from inside its namespace.
func (m *Mesh) get(id string, port int, path string) ([]byte, error) {
	h := m.Hosts[id]
	resp, err := h.NS.HTTPClient(3 * time.Second).Get("http://" + m.inner(h, port) + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return b, fmt.Errorf("%s %s: %s", id, path, resp.Status)
	}
	return b, nil
}

func (m *Mesh) healthy(id string) bool {
	_, err := m.get(id, portHTTP, "/healthz")
	return err == nil
}

type streamInfo struct {
	App     string `json:"app"`
	Name    string `json:"name"`
	Viewers int    `json:"viewers"`
	Live    bool   `json:"live"`
}

func (m *Mesh) streams(id string) []streamInfo {
	b, err := m.get(id, portHTTP, "/api/v1/streams")
	if err != nil {
		return nil
	}
	var out struct {
		Streams []streamInfo `json:"streams"`
	}
	_ = json.Unmarshal(b, &out)
	return out.Streams
}

func (m *Mesh) live(id string) bool { return m.LiveStream(id, Stream) }

// LiveStream reports whether server id has stream with a publisher.
func (m *Mesh) LiveStream(id, stream string) bool {
	for _, s := range m.streams(id) {
		if s.App+"/"+s.Name == stream && s.Live {
			return true
		}
	}
	return false
}

// Live reports whether server id has the stream with a publisher (on a
// relay: a running pull).
func (m *Mesh) Live(id string) bool { return m.live(id) }

// Viewers is how many viewers server id reports for the stream.
func (m *Mesh) Viewers(id string) int {
	for _, s := range m.streams(id) {
		if s.App+"/"+s.Name == Stream {
			return s.Viewers
		}
	}
	return 0
}

// MeshView is orchestrator id's redirector's view of the mesh.
func (m *Mesh) MeshView(id string) (redirector.MeshView, error) {
	var mv redirector.MeshView
	b, err := m.get(id, portControl, "/api/v1/mesh")
	if err != nil {
		return mv, err
	}
	return mv, json.Unmarshal(b, &mv)
}

// Metric reads one unlabelled Prometheus value from orchestrator id.
func (m *Mesh) Metric(id, name string) (float64, error) {
	b, err := m.get(id, portControl, "/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s: no metric %s", id, name)
}

// Drops is how many frames server id's hub drop policy dropped so far
// (all classes), -1 if it does not answer.
func (m *Mesh) Drops(id string) float64 {
	b, err := m.get(id, portHTTP, "/metrics")
	if err != nil {
		return -1
	}
	var sum float64
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "relaymesh_hub_frames_dropped_total{") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			v, _ := strconv.ParseFloat(line[i+1:], 64)
			sum += v
		}
	}
	return sum
}

// Leader is the orchestrator that holds the lease ("" if none).
func (m *Mesh) Leader() string {
	for _, id := range []string{"orch-eu", "orch-na"} {
		if !m.Procs[id].Running() {
			continue
		}
		if v, err := m.Metric(id, "relaymesh_orchestrator_leader"); err == nil && v == 1 {
			return id
		}
	}
	return ""
}

// Redirector is the URL base of a running orchestrator's redirector.
func (m *Mesh) Redirector() string {
	for _, id := range []string{"orch-eu", "orch-na"} {
		if m.Procs[id].Running() {
			return fmt.Sprintf("http://%s:%d", m.Hosts[id].Addr, portControl)
		}
	}
	return ""
}

// Choose asks the redirector, from viewer host v, where to play over proto.
func (m *Mesh) Choose(ctx context.Context, v *Host, stream, proto string) (redirector.Choice, error) {
	var ch redirector.Choice
	base := m.Redirector()
	if base == "" {
		return ch, errors.New("no orchestrator running")
	}
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/play/"+stream+"?proto="+url.QueryEscape(proto), nil)
	if err != nil {
		return ch, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.NS.HTTPClient(3 * time.Second).Do(req)
	if err != nil {
		return ch, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return ch, fmt.Errorf("/play: %s %s", resp.Status, b)
	}
	return ch, json.NewDecoder(resp.Body).Decode(&ch)
}

// PlaceOn asks the redirector from viewer host v until it names relay for
// stream, building the demand that opens it; it returns the URL to play.
func (m *Mesh) PlaceOn(ctx context.Context, v *Host, stream, relay, proto string, within time.Duration) (string, error) {
	var last redirector.Choice
	err := waitFor(ctx, within, "redirector to name "+relay, func() bool {
		ch, err := m.Choose(ctx, v, stream, proto)
		if err != nil {
			return false
		}
		last = ch
		return ch.Relay == relay
	})
	if err != nil {
		return "", fmt.Errorf("%w (last answer %s %q)", err, last.Relay, last.Reason)
	}
	return last.URL, nil
}

// waitFor polls ok every 100 ms until it holds or d passed.
func waitFor(ctx context.Context, d time.Duration, what string, ok func() bool) error {
	deadline := time.Now().Add(d)
	for {
		if ok() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", d, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Publisher is ffmpeg pushing a test pattern to the primary, started again
// whenever it exits (a broadcaster that reconnects), until Stop.
type Publisher struct {
	Host *Host
	URL  string
	Log  string

	mu       sync.Mutex
	cmd      *exec.Cmd
	cancel   context.CancelFunc
	done     chan struct{}
	Restarts int
}

// Start runs the supervisor.
func (p *Publisher) Start(ctx context.Context) {
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			lf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return
			}
			cmd := p.Host.NS.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
				"-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25",
				"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
				"-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-pix_fmt", "yuv420p",
				"-g", "50", "-b:v", "300k", "-maxrate", "300k", "-bufsize", "300k",
				"-c:a", "aac", "-b:a", "48k", "-f", "flv", p.URL)
			cmd.Stdout, cmd.Stderr = lf, lf
			fmt.Fprintf(lf, "=== %s ffmpeg start\n", time.Now().Format(time.RFC3339Nano))
			if err := cmd.Start(); err == nil {
				p.mu.Lock()
				p.cmd = cmd
				p.mu.Unlock()
				stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
				err = cmd.Wait()
				stop()
				fmt.Fprintf(lf, "=== %s ffmpeg exit %v\n", time.Now().Format(time.RFC3339Nano), err)
				p.mu.Lock()
				p.cmd = nil
				p.Restarts++
				p.mu.Unlock()
			}
			lf.Close()
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
}

// Kill kills the running ffmpeg (the supervisor starts another).
func (p *Publisher) Kill() {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// Stop ends the supervisor and ffmpeg.
func (p *Publisher) Stop() {
	if p.cancel != nil {
		p.cancel()
		<-p.done
	}
}

// nsDialer dials from a host's namespace (for nats.go's custom dialer).
type nsDialer struct{ h *Host }

func (d nsDialer) Dial(network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return d.h.NS.Dial(ctx, addr)
}
