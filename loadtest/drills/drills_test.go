package drills

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/redirector"
)

// TestMain lets the test binary double as a NATS node of the mesh.
func TestMain(m *testing.M) {
	if js := os.Getenv(NATSRoleEnv); js != "" {
		if err := RunNATSNode(js); err != nil {
			fmt.Fprintln(os.Stderr, "nats node:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

// loadavg is the machine's one-minute load average.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// skipOrFail skips on a developer's machine and fails in CI.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("drills must run in CI: "+format, args...)
	}
	t.Skipf("skipping the drills: "+format, args...)
}

// relaymeshBin is RELAYMESH_BIN or a fresh build of cmd/relaymesh.
func relaymeshBin(t *testing.T) string {
	if b := os.Getenv("RELAYMESH_BIN"); b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	out := filepath.Join(t.TempDir(), "relaymesh")
	cmd := exec.Command("go", "build", "-o", out, "github.com/relaymesh/relaymesh/cmd/relaymesh")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/relaymesh: %v\n%s", err, b)
	}
	return out
}

// suite is one run of every drill on one mesh.
type suite struct {
	t       *testing.T
	ctx     context.Context
	m       *Mesh
	res     *Results
	rtmpN   int // RTMP swarm viewers in all (split over the regions)
	hlsN    int
	reconnN int // harness players that reconnect through the redirector
	urls    map[string]string
	drops0  map[string]float64 // relays' drop counters when the last swarms started
	loads   []string           // load average at each drill's start
}

// TestDrills builds the multi-host mesh and runs every drill in turn.
// `make drills` runs it (RELAYMESH_DRILLS=1) and writes docs/reliability.md.
func TestDrills(t *testing.T) {
	if os.Getenv("RELAYMESH_DRILLS") != "1" {
		t.Skip("the multi-host drills run with `make drills` (RELAYMESH_DRILLS=1)")
	}
	if err := Available(); err != nil {
		skipOrFail(t, "network namespaces cannot be made here: %v", err)
	}
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		skipOrFail(t, "ffmpeg not installed (apt-get install ffmpeg)")
	}
	bin := relaymeshBin(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("DRILL_LOGS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lab, err := NewLab()
	if err != nil {
		t.Fatal(err)
	}
	// Cleanup even when the run is interrupted or times out: go test's
	// timeout panics without running cleanups, so stop a little earlier.
	budget := 12 * time.Minute
	if dl, ok := t.Deadline(); ok {
		budget = time.Until(dl) - 20*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var m *Mesh
	var n *Net
	cleanup := func() {
		if m != nil {
			m.Close()
		}
		if n != nil {
			n.Close()
		}
		lab.Close()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		select {
		case s := <-sig:
			fmt.Fprintf(os.Stderr, "drills: %v: cleaning up\n", s)
			cleanup()
			os.Exit(1)
		case <-ctx.Done():
		}
	}()
	defer cleanup()

	netem := lab.NetemWorks()
	switch os.Getenv("DRILL_NETEM") {
	case "0":
		netem = false
	case "1":
		netem = true
	}
	mode := "userspace delay proxy (no sch_netem in this kernel)"
	if netem {
		mode = "tc netem"
	}
	direct := os.Getenv("DRILL_DELAY") == "none"
	if direct {
		netem, mode = false, "nothing (DRILL_DELAY=none: no latencies, no proxies)"
	}
	t.Logf("lab %s, latencies by %s, logs in %s", lab.Prefix, mode, dir)
	if n, err = NewNet(ctx, lab, netem); err != nil {
		t.Fatal(err)
	}
	n.Direct = direct
	start := time.Now()
	m, err = StartMesh(ctx, n, MeshConfig{Bin: bin, Self: self, Dir: dir, Threshold: 5})
	if err != nil {
		t.Fatalf("mesh: %v (logs in %s)", err, dir)
	}
	t.Logf("mesh up in %.1f s", time.Since(start).Seconds())
	if hold, err := time.ParseDuration(os.Getenv("DRILL_HOLD")); err == nil {
		t.Logf("holding the mesh for %v (DRILL_HOLD) before the drills", hold)
		sleep(ctx, hold)
	}
	s := &suite{t: t, ctx: ctx, m: m, res: &Results{}, urls: map[string]string{},
		rtmpN: envInt("DRILL_RTMP_VIEWERS", 300), hlsN: envInt("DRILL_HLS_VIEWERS", 20), reconnN: envInt("DRILL_RECONNECT_VIEWERS", 20)}
	s.rtmpN = max(s.rtmpN, 3)
	if err := s.placeAll(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		name string
		run  func()
	}{
		{"relay-kill", s.relayKill},
		{"nats-kill", s.natsKill},
		{"orchestrator-kill", s.orchestratorKill},
		{"primary-restart", s.primaryRestart},
		{"broadcaster-flap", s.broadcasterFlap},
		{"region-cut", s.regionCut},
	} {
		if ctx.Err() != nil {
			t.Errorf("out of time before %s", d.name)
			break
		}
		load := loadavg()
		t.Logf("drill %s (load average %s)", d.name, load)
		s.loads = append(s.loads, d.name+" "+load)
		d.run()
	}
	s.leadershipCheck()
	setup := fmt.Sprintf("This run: latencies by %s; %d RTMP swarm viewers (%d per region), %d reconnecting players, %d HLS viewers; "+
		"`DRILL_RTMP_VIEWERS`, `DRILL_RECONNECT_VIEWERS` and `DRILL_HLS_VIEWERS` change the counts. "+
		"Load average (1 min) of the machine at each drill's start: %s.\n",
		mode, s.rtmpN/3*3, s.rtmpN/3, s.reconnN, s.hlsN, strings.Join(s.loads, ", "))
	table := s.res.Table()
	fmt.Println(table)
	if p := os.Getenv("DRILL_REPORT"); p != "" {
		if err := s.res.WriteReport(p, setup); err != nil {
			t.Error(err)
		}
	}
	for _, r := range s.res.Rows() {
		if r.NotMeasured {
			t.Errorf("%s: %s: not measured: %s", r.Drill, r.Check, r.Measured)
		} else if !r.Pass {
			t.Errorf("%s: %s: measured %s, threshold %s", r.Drill, r.Check, r.Measured, r.Threshold)
		}
	}
}

// leadershipCheck counts the times an orchestrator gave up the lease on an
// error (a renewal or restore that timed out) over the whole run: kills do
// not log, so these are all losses the drills did not cause directly.
func (s *suite) leadershipCheck() {
	var lost []string
	lapsed := 0
	for _, id := range []string{"orch-eu", "orch-na"} {
		b, err := os.ReadFile(s.m.Procs[id].Log)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `msg="leadership lost"`) {
				_, e, _ := strings.Cut(line, "err=")
				lost = append(lost, id+": "+strings.Trim(e, `"`))
			}
			if strings.Contains(line, `msg="the lease had lapsed`) {
				lapsed++
			}
		}
	}
	// A lease that expired on the server while its bucket could not be
	// written (an election longer than its validity) and that its leader
	// wrote back: no leader change, but decisions paused meanwhile.
	s.add("whole run", "leases that lapsed in a long election and were written back by their leader", "counted",
		fmt.Sprintf("%d", lapsed), true)
	m := fmt.Sprintf("%d", len(lost))
	if len(lost) > 0 {
		m += fmt.Sprintf(" (e.g. %.90s)", lost[0])
	}
	s.add("whole run", "leases given up on an error (not by a kill)", "0", m, len(lost) == 0)
}

// placeAll asks the redirector from each region until it names the
// region's relay (the demand opens the relays).
func (s *suite) placeAll() error {
	start := time.Now()
	errs := make([]error, len(Regions))
	urls := make([]string, len(Regions))
	var wg sync.WaitGroup
	for i, r := range Regions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			urls[i], errs[i] = s.m.PlaceOn(s.ctx, s.m.Hosts["view-"+r], Stream, RelayOf(r), "rtmp", 90*time.Second)
		}()
	}
	wg.Wait()
	for i, r := range Regions {
		if errs[i] != nil {
			return fmt.Errorf("placing %s viewers: %w", r, errs[i])
		}
		s.urls[r] = urls[i]
	}
	s.t.Logf("every region's relay placed after %.1f s of requests", time.Since(start).Seconds())
	return nil
}

func (s *suite) add(drill, check, threshold, measured string, pass bool) {
	s.t.Logf("%s: %s: %s (threshold %s)", drill, check, measured, threshold)
	s.res.Add(drill, check, threshold, measured, pass)
}

// swarms starts a loadtest swarm per region on the region's relay.
func (s *suite) swarms(tag string, d time.Duration, regions ...string) map[string]*Swarm {
	if len(regions) == 0 {
		regions = Regions
	}
	out := map[string]*Swarm{}
	s.drops0 = map[string]float64{}
	for _, r := range regions {
		s.drops0[r] = s.m.Drops(RelayOf(r))
		out[r] = s.m.StartSwarm(s.m.Hosts["view-"+r], s.urls[r], s.rtmpN/3, 3*time.Second, d, tag+"-"+r)
	}
	return out
}

// losses sums what the swarms of regions lost: viewers failed or ended
// with an error, and frame gaps.
func (s *suite) losses(sw map[string]*Swarm, regions ...string) (bad, gaps, viewers int, errs []string) {
	for _, r := range regions {
		rep, err := sw[r].Wait()
		if err != nil {
			errs = append(errs, err.Error())
			bad += s.rtmpN / 3
			continue
		}
		f, e, g := Lost(rep)
		bad += f + e
		gaps += g
		viewers += rep.Viewers
		errs = append(errs, rep.Errors...)
	}
	return
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// lossCheck records "viewers lose nothing" for the swarms of regions:
// none disconnected, and no frames dropped for them (timestamp gaps).
func (s *suite) lossCheck(drill, who string, sw map[string]*Swarm, regions ...string) {
	bad, gaps, viewers, errs := s.losses(sw, regions...)
	measured := fmt.Sprintf("%d of %d", bad, viewers)
	if len(errs) > 0 {
		measured += fmt.Sprintf(" (e.g. %.80q)", errs[0])
	}
	s.add(drill, who+" stay connected", "0 disconnected", measured, bad == 0 && viewers > 0)
	dropped, known := 0.0, true
	for _, r := range regions {
		d0, d1 := s.drops0[r], s.m.Drops(RelayOf(r))
		if d0 < 0 || d1 < d0 {
			known = false // the relay did not answer or restarted
			continue
		}
		dropped += d1 - d0
	}
	m := fmt.Sprintf("%d gaps over %d viewers", gaps, viewers)
	if known {
		m += fmt.Sprintf("; the relays' drop policy dropped %.0f frames", dropped)
	}
	s.add(drill, who+": no frames dropped (timestamp gaps)", "0 gaps", m, gaps == 0 && viewers > 0)
}

// probes runs a harness player on each region's relay.
func (s *suite) probes(ctx context.Context, regions ...string) map[string]*Player {
	out := map[string]*Player{}
	for _, r := range regions {
		out[r] = Players(ctx, s.m.Hosts["view-"+r], s.urls[r], 1, nil)[0]
	}
	return out
}

// via is a redirector lookup from viewer host v.
func (s *suite) via(v *Host) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		ch, err := s.m.Choose(ctx, v, Stream, "rtmp")
		return ch.URL, err
	}
}

// worst is the largest of ds, and how many were -1 (never).
func worst(ds []time.Duration) (time.Duration, int) {
	var w time.Duration
	never := 0
	for _, d := range ds {
		if d < 0 {
			never++
			continue
		}
		w = max(w, d)
	}
	return w, never
}

func median(ds []time.Duration) time.Duration {
	var ok []time.Duration
	for _, d := range ds {
		if d >= 0 {
			ok = append(ok, d)
		}
	}
	if len(ok) == 0 {
		return -1
	}
	sort.Slice(ok, func(i, j int) bool { return ok[i] < ok[j] })
	return ok[len(ok)/2]
}

// relayKill: relay-na is killed (kill -9) under load.
func (s *suite) relayKill() {
	const drill = "relay kill"
	victim, vr := RelayOf("na"), "na"
	d := 25 * time.Second
	ctx, cancel := context.WithTimeout(s.ctx, d+20*time.Second)
	defer cancel()
	sw := s.swarms("relaykill", d, "eu", "as")
	view := s.m.Hosts["view-"+vr]
	via := ""
	if s.loadtestHas("rtmp", "reconnect-via") {
		via = s.m.Redirector() + "/play/" + Stream + "?proto=rtmp"
	}
	sw[vr] = s.m.StartSwarm(view, s.urls[vr], s.rtmpN/3, 3*time.Second, d, "relaykill-"+vr, reconnectArgs(via)...)
	recon := Players(ctx, view, s.urls[vr], s.reconnN, s.via(view))
	hls := s.hlsViewers(ctx)
	sleep(ctx, 8*time.Second)
	killed := time.Now()
	s.m.Procs[victim].Kill()
	// The redirector: how long it keeps naming the dead relay.
	var clean time.Duration = -1
	_ = waitFor(ctx, 15*time.Second, "redirector clean", func() bool {
		ch, err := s.m.Choose(ctx, view, Stream, "rtmp")
		if err == nil && ch.Relay != victim {
			clean = time.Since(killed)
			return true
		}
		return false
	})
	s.lossCheck(drill, "other relays' RTMP viewers", sw, "eu", "as")
	if via == "" {
		_, _, _, _ = s.losses(sw, vr)
		s.t.Logf("%s: loadtest rtmp has no --reconnect-via: not measured", drill)
		s.res.AddNotMeasured(drill, "the killed relay's swarm reconnects through the redirector (loadtest rtmp --reconnect-via)", "all play on",
			"this build's `loadtest rtmp` has no --reconnect-via")
	} else {
		// A player that lost its connection and played on through the
		// redirector has no error (the loss is its last_loss); one that
		// never got a picture again keeps the error.
		bad, _, viewers, errs := s.losses(sw, vr)
		m := fmt.Sprintf("%d of %d ended with an error", bad, viewers)
		if rep, err := sw[vr].Wait(); err == nil && rep != nil {
			m += fmt.Sprintf("; %d reconnects, time to picture p50 %.2f s, max %.2f s", rep.Reconnects, rep.ReconnectP50/1000, rep.ReconnectMax/1000)
		}
		if len(errs) > 0 {
			m += fmt.Sprintf(" (e.g. %.80q)", errs[0])
		}
		s.add(drill, "the killed relay's swarm reconnects through the redirector (loadtest rtmp --reconnect-via)", "all play on", m, bad == 0 && viewers > 0)
	}
	sleep(ctx, 2*time.Second)
	var ttp []time.Duration
	var landed []string
	for _, p := range recon {
		ttp = append(ttp, p.FirstFrameAfter(killed))
		if pl := p.Played(); len(pl) > 1 {
			landed = append(landed, pl[len(pl)-1])
		}
	}
	w, never := worst(ttp)
	measured := fmt.Sprintf("worst %s, median %s, %d of %d never", secs(w), secs(median(ttp)), never, len(ttp))
	s.add(drill, "reconnecting viewers (through /play) have a picture again", "≤ 3 s after the kill", measured,
		never == 0 && w <= 3*time.Second && len(ttp) > 0)
	if clean < 0 {
		s.add(drill, "redirector stops naming the dead relay", "≤ 3 s", "still named after 15 s", false)
	} else {
		s.add(drill, "redirector stops naming the dead relay", "≤ 3 s", secs(clean), clean <= 3*time.Second)
	}
	s.hlsResult(drill, vr, hls, killed)
	cancel()
	if err := s.m.Restart(victim); err != nil {
		s.t.Errorf("restarting %s: %v", victim, err)
	}
	// A relay that comes back is placed again while demand is there.
	var back time.Duration = -1
	restarted := time.Now()
	_ = waitFor(s.ctx, 20*time.Second, "relay placed again", func() bool {
		ch, err := s.m.Choose(s.ctx, view, Stream, "rtmp")
		if err == nil && ch.Relay == victim {
			back = time.Since(restarted)
			return true
		}
		return false
	})
	if back < 0 {
		s.add(drill, "restarted relay is placed again", "≤ 20 s", "not within 20 s", false)
	} else {
		s.add(drill, "restarted relay is placed again", "≤ 20 s", secs(back), true)
	}
	if u, err := s.m.PlaceOn(s.ctx, view, Stream, victim, "rtmp", 60*time.Second); err == nil {
		s.urls[vr] = u
	}
}

// loadtestHas says whether `relaymesh loadtest proto -h` lists flag.
func (s *suite) loadtestHas(proto, flag string) bool {
	out, _ := exec.Command(s.m.Cfg.Bin, "loadtest", proto, "-h").CombinedOutput()
	return strings.Contains(string(out), "-"+flag)
}

func reconnectArgs(via string) []string {
	if via == "" {
		return nil
	}
	return []string{"--reconnect-via", via}
}

type hlsRun struct {
	viewers map[string][]*HLSViewer
	start   time.Time
}

// hlsViewers starts the HLS viewers, split over the regions' relays.
func (s *suite) hlsViewers(ctx context.Context) hlsRun {
	h := hlsRun{viewers: map[string][]*HLSViewer{}, start: time.Now()}
	for i := 0; i < s.hlsN; i++ {
		r := Regions[i%len(Regions)]
		v := &HLSViewer{Host: s.m.Hosts["view-"+r],
			URL:  fmt.Sprintf("http://%s:%d/hls/%s/index.m3u8", s.m.Hosts[RelayOf(r)].Addr, portHTTP, Stream),
			Play: s.m.Redirector() + "/play/" + Stream + "?proto=hls"}
		h.viewers[r] = append(h.viewers[r], v)
		go v.Run(ctx)
	}
	return h
}

// hlsResult: the HLS viewers of the relays that stayed lose nothing; those
// of the killed relay (tied to it by relative URIs) are reported.
func (s *suite) hlsResult(drill, victim string, h hlsRun, killed time.Time) {
	if s.hlsN == 0 {
		return
	}
	fails, segs, n := 0, 0, 0
	var stall time.Duration
	for _, r := range Regions {
		if r == victim {
			continue
		}
		for _, v := range h.viewers[r] {
			f, sg, st := v.Stats(h.start, killed, time.Now())
			fails, segs, stall, n = fails+f, segs+sg, max(stall, st), n+1
		}
	}
	s.add(drill, fmt.Sprintf("%d HLS viewers of the other relays lose nothing", n), "0 failed fetches",
		fmt.Sprintf("%d failed fetches, %d segments, longest wait for a new segment %s", fails, segs, secs(stall)), fails == 0 && segs > 0)
	// They follow content steering: on the dead relay's first failure they
	// move to the next pathway of the redirector's last steering answer.
	recovered, m := 0, 0
	var worstWait time.Duration
	moved := map[string]int{}
	for _, v := range h.viewers[victim] {
		m++
		_, _, st := v.Stats(killed, killed, time.Now())
		worstWait = max(worstWait, st)
		if st <= 3*time.Second+2*time.Second {
			recovered++
		}
		if p := v.Pathways(); len(p) > 0 {
			moved[p[len(p)-1]]++
		}
	}
	if m > 0 {
		var to []string
		for p, n := range moved {
			to = append(to, fmt.Sprintf("%d on %s", n, p))
		}
		sort.Strings(to)
		s.add(drill, fmt.Sprintf("%d HLS viewers of the killed relay get segments again (content steering)", m), "all; no wait > 5 s for a new segment (2 s segments)",
			fmt.Sprintf("%d of %d, longest wait %s (at the end: %s)", recovered, m, secs(worstWait), strings.Join(to, ", ")), recovered == m)
	}
}

// placementsLeader is the NATS node that leads the placements bucket's stream.
func (s *suite) placementsLeader() (string, int, error) {
	nc, err := nats.Connect(s.m.NATSURLs, nats.SetCustomDialer(nsDialer{s.m.Hosts["view-eu"]}), nats.Timeout(3*time.Second))
	if err != nil {
		return "", 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return "", 0, err
	}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "KV_"+bus.BucketPlacements)
	if err != nil {
		return "", 0, err
	}
	info := st.CachedInfo()
	if info.Cluster == nil {
		return "", 0, fmt.Errorf("no cluster info")
	}
	return info.Cluster.Leader, info.Config.Replicas, nil
}

// natsKill: the NATS node that holds the placements bucket is killed.
func (s *suite) natsKill() {
	const drill = "NATS node kill"
	victim, replicas, err := s.placementsLeader()
	if err != nil || s.m.Procs[victim] == nil {
		s.t.Logf("placements bucket's node not found (%v): killing nats-na", err)
		victim = "nats-na"
	}
	d := 25 * time.Second
	ctx, cancel := context.WithTimeout(s.ctx, d+20*time.Second)
	defer cancel()
	sw := s.swarms("natskill", d)
	sleep(ctx, 6*time.Second)
	leader := s.m.Leader()
	killed := time.Now()
	s.m.Procs[victim].Kill()
	// Decisions go on: the lease stays held, relays keep reporting (their
	// statuses expire after 10 s without a write) and the placements answer.
	var noLeader time.Duration
	changes := 0
	last := leader
	for time.Since(killed) < 14*time.Second && ctx.Err() == nil {
		t0 := time.Now()
		l := s.m.Leader()
		if l == "" {
			noLeader += 500 * time.Millisecond
		} else if l != last {
			changes++
		}
		if l != "" {
			last = l
		}
		sleep(ctx, 500*time.Millisecond-time.Since(t0))
	}
	at := s.m.Leader()
	if at == "" {
		at = "orch-eu"
	}
	mv, err := s.m.MeshView(at)
	// A decision made with the node down: a new stream's relay opens.
	pubB := s.m.Publisher(StreamB)
	pubB.Start(ctx)
	defer pubB.Stop()
	var decided time.Duration = -1
	var why error
	if why = waitFor(ctx, 15*time.Second, StreamB+" live", func() bool { return s.m.LiveStream("primary", StreamB) }); why == nil {
		t0 := time.Now()
		if _, why = s.m.PlaceOn(ctx, s.m.Hosts["view-as"], StreamB, RelayOf("as"), "rtmp", 20*time.Second); why == nil {
			decided = time.Since(t0)
		}
	}
	up := 0
	for _, r := range mv.Relays {
		if r.Status == "up" {
			up++
		}
	}
	carried := len(carriersOf(mv))
	s.lossCheck(drill, "RTMP viewers", sw, Regions...)
	s.add(drill, fmt.Sprintf("lease held through the kill (killed %s, holding the placements bucket, R%d)", victim, replicas),
		"0 s without a leader, no change", fmt.Sprintf("%s without a leader, %d changes", secs(noLeader), changes), noLeader == 0 && changes == 0 && err == nil)
	s.add(drill, "relays still reported up 14 s after the kill (status writes go on)", "3 of 3",
		fmt.Sprintf("%d of %d (stream on %d relays)", up, len(mv.Relays), carried), up == 3)
	if decided < 0 {
		s.add(drill, "decisions go on: a new stream's relay opens on demand", "≤ 10 s", fmt.Sprintf("not opened (%v)", why), false)
	} else {
		s.add(drill, "decisions go on: a new stream's relay opens on demand", "≤ 10 s", secs(decided), decided <= 10*time.Second)
	}
	pubB.Stop()
	if err := s.m.Procs[victim].Start(); err != nil {
		s.t.Errorf("restarting %s: %v", victim, err)
	}
	_ = waitFor(s.ctx, 30*time.Second, "NATS node back", func() bool { return s.m.natsAnswers(s.m.Hosts[victim]) })
	_ = waitFor(s.ctx, 30*time.Second, "relays up again", func() bool {
		mv, err := s.m.MeshView("orch-eu")
		if err != nil {
			return false
		}
		for _, r := range mv.Relays {
			if r.Status != "up" {
				return false
			}
		}
		return true
	})
}

// carriersOf lists the relays the mesh view places the drill stream on.
func carriersOf(mv redirector.MeshView) []string {
	for _, st := range mv.Streams {
		if st.App+"/"+st.Name == Stream {
			return st.Relays
		}
	}
	return nil
}

// orchestratorKill: the leading orchestrator is killed.
func (s *suite) orchestratorKill() {
	const drill = "orchestrator kill"
	leader := s.m.Leader()
	if leader == "" {
		s.add(drill, "a leader before the kill", "one", "none", false)
		return
	}
	other := map[string]string{"orch-eu": "orch-na", "orch-na": "orch-eu"}[leader]
	before, err := s.m.MeshView(other)
	if err != nil {
		s.add(drill, "mesh view before the kill", "answers", err.Error(), false)
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 40*time.Second)
	defer cancel()
	probes := s.probes(ctx, Regions...)
	sleep(ctx, 2*time.Second)
	killed := time.Now()
	s.m.Procs[leader].Kill()
	var took time.Duration = -1
	_ = waitFor(ctx, 20*time.Second, "takeover", func() bool {
		if v, err := s.m.Metric(other, "relaymesh_orchestrator_leader"); err == nil && v == 1 {
			took = time.Since(killed)
			return true
		}
		return false
	})
	sleep(ctx, 5*time.Second)
	after, err := s.m.MeshView(other)
	lost := []string{}
	for _, b := range before.Streams {
		for _, r := range b.Relays {
			found := false
			for _, a := range after.Streams {
				if a.App == b.App && a.Name == b.Name && slices.Contains(a.Relays, r) {
					found = true
				}
			}
			if !found {
				lost = append(lost, b.App+"/"+b.Name+"@"+r)
			}
		}
	}
	stalls := []string{}
	worstStall := time.Duration(0)
	for _, r := range Regions {
		st := probes[r].LongestStall(killed, time.Now())
		worstStall = max(worstStall, st)
		stalls = append(stalls, r+" "+secs(st))
	}
	if took < 0 {
		s.add(drill, "the other orchestrator takes over", "≤ 5 s", "not within 20 s", false)
	} else {
		s.add(drill, "the other orchestrator takes over", "≤ 5 s", secs(took), took <= 5*time.Second)
	}
	m := fmt.Sprintf("%d lost of %d", len(lost), countPlacements(before))
	if len(lost) > 0 {
		m += " (" + strings.Join(lost, ", ") + ")"
	}
	if err != nil {
		m += fmt.Sprintf("; mesh view after: %v", err)
	}
	s.add(drill, "no placement lost", "0 lost", m, err == nil && len(lost) == 0 && countPlacements(before) > 0)
	s.add(drill, "viewers' longest stall", "≤ 1 s", strings.Join(stalls, ", "), worstStall <= time.Second)
	cancel()
	if err := s.m.RestartOrchestrator(leader); err != nil {
		s.t.Errorf("restarting %s: %v", leader, err)
	}
}

// countPlacements is how many (stream, relay) placements a view has.
func countPlacements(mv redirector.MeshView) int {
	n := 0
	for _, st := range mv.Streams {
		n += len(st.Relays)
	}
	return n
}

// primaryRestart: the primary is killed and started again; the broadcaster
// reconnects to it.
func (s *suite) primaryRestart() {
	const drill = "primary restart"
	d := 30 * time.Second
	ctx, cancel := context.WithTimeout(s.ctx, d+20*time.Second)
	defer cancel()
	sw := s.swarms("primary", d)
	probes := s.probes(ctx, Regions...)
	sleep(ctx, 6*time.Second)
	s.m.Procs["primary"].Kill()
	if err := s.m.Restart("primary"); err != nil {
		s.t.Errorf("restarting the primary: %v", err)
	}
	var back time.Time
	_ = waitFor(ctx, 20*time.Second, "broadcaster back on the primary", func() bool {
		if s.m.Live("primary") {
			back = time.Now()
			return true
		}
		return false
	})
	s.lossCheck(drill, "RTMP viewers", sw, Regions...)
	s.resumeCheck(drill, probes, back)
}

// resumeCheck: each probe's picture after the broadcaster is back at t.
func (s *suite) resumeCheck(drill string, probes map[string]*Player, t time.Time) {
	if t.IsZero() {
		s.add(drill, "picture again after the broadcaster is back", "≤ 3 s", "broadcaster not back within 20 s", false)
		return
	}
	sleep(s.ctx, 4*time.Second)
	var parts []string
	var ds []time.Duration
	for _, r := range Regions {
		d := probes[r].FirstFrameAfter(t)
		ds = append(ds, d)
		if d < 0 {
			parts = append(parts, r+" never")
		} else {
			parts = append(parts, r+" "+secs(d))
		}
	}
	w, never := worst(ds)
	s.add(drill, "picture again after the broadcaster is back", "≤ 3 s", strings.Join(parts, ", "), never == 0 && w <= 3*time.Second)
}

// broadcasterFlap: ffmpeg is killed four times, 4 s apart; it reconnects.
func (s *suite) broadcasterFlap() {
	const drill = "broadcaster flap"
	d := 30 * time.Second
	ctx, cancel := context.WithTimeout(s.ctx, d+20*time.Second)
	defer cancel()
	sw := s.swarms("flap", d)
	probes := s.probes(ctx, Regions...)
	sleep(ctx, 6*time.Second)
	var resumes []time.Duration
	for i := 0; i < 4 && ctx.Err() == nil; i++ {
		s.m.Pub.Kill()
		_ = waitFor(ctx, 3*time.Second, "unpublished", func() bool { return !s.m.Live("primary") })
		var back time.Time
		_ = waitFor(ctx, 10*time.Second, "broadcaster back", func() bool {
			if s.m.Live("primary") {
				back = time.Now()
				return true
			}
			return false
		})
		sleep(ctx, 4*time.Second)
		for _, r := range Regions {
			if back.IsZero() {
				resumes = append(resumes, -1)
			} else {
				resumes = append(resumes, probes[r].FirstFrameAfter(back))
			}
		}
	}
	s.lossCheck(drill, "RTMP viewers", sw, Regions...)
	w, never := worst(resumes)
	s.add(drill, "picture again after each return (4 flaps × 3 regions)", "≤ 3 s", fmt.Sprintf("worst %s, %d never", secs(w), never), never == 0 && w <= 3*time.Second && len(resumes) > 0)
}

// regionCut: region as loses its links for 10 s, then they come back.
func (s *suite) regionCut() {
	const drill = "region cut"
	const r = "as"
	d := 35 * time.Second
	ctx, cancel := context.WithTimeout(s.ctx, d+25*time.Second)
	defer cancel()
	sw := s.swarms("cut", d)
	probes := s.probes(ctx, Regions...)
	sleep(ctx, 6*time.Second)
	if err := s.m.Net.Cut(r); err != nil {
		s.t.Errorf("cut: %v", err)
	}
	sleep(ctx, 10*time.Second)
	if err := s.m.Net.Heal(r); err != nil {
		s.t.Errorf("heal: %v", err)
	}
	healed := time.Now()
	var upAgain time.Duration = -1
	_ = waitFor(ctx, 20*time.Second, "relay-as up again", func() bool {
		mv, err := s.m.MeshView("orch-eu")
		if err != nil {
			return false
		}
		for _, x := range mv.Relays {
			if x.ID == RelayOf(r) && x.Status == "up" {
				upAgain = time.Since(healed)
				return true
			}
		}
		return false
	})
	sleep(ctx, 3*time.Second)
	s.lossCheck(drill, "other regions' RTMP viewers", sw, "eu", "na")
	bad, _, viewers, _ := s.losses(sw, r)
	pic := probes[r].FirstFrameAfter(healed)
	ends := probes[r].EndsAfter(healed.Add(-10 * time.Second))
	if pic < 0 {
		s.add(drill, "cut-off region's viewers have a picture again after the heal", "≤ 5 s",
			fmt.Sprintf("never (probe's connection ended %d times); swarm: %d of %d disconnected", ends, bad, viewers), false)
	} else {
		s.add(drill, "cut-off region's viewers have a picture again after the heal", "≤ 5 s",
			fmt.Sprintf("%s; swarm: %d of %d disconnected", secs(pic), bad, viewers), pic <= 5*time.Second)
	}
	if upAgain < 0 {
		s.add(drill, "cut-off region's relay reported up again", "≤ 15 s after the heal", "not within 20 s", false)
	} else {
		s.add(drill, "cut-off region's relay reported up again", "≤ 15 s after the heal", secs(upAgain), upAgain <= 15*time.Second)
	}
}
