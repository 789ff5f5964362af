package redirector

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"time"

	mrand "math/rand/v2"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// TokenCookie and TokenParam carry the sticky token (to the redirector);
// PlayParam carries the play token (to the relay, on the Location).
const (
	TokenCookie = "relaymesh_sticky"
	TokenParam  = "token"
	PlayParam   = "token"
)

// Choice is the JSON answer of /play with Accept: application/json.
type Choice struct {
	Relay    string  `json:"relay"`
	Location string  `json:"location"`
	Distance float64 `json:"distance"`
	Reason   string  `json:"reason"`
	URL      string  `json:"url"`
	Token    string  `json:"token,omitempty"`
	Viewer   string  `json:"viewer_location,omitempty"`
	// PlayToken is the play token already in URL: ?token= for RTMP, the
	// /t/TOKEN/ directory for HLS and DASH (see Config.PlayToken).
	PlayToken string `json:"play_token,omitempty"`
	// Provisional: a relay of the stream nearer to the viewer is starting;
	// the token holds the viewer here only until that relay serves.
	Provisional bool `json:"provisional,omitempty"`
}

// Handler serves /play/{app}/{name} and /api/v1/mesh.
func (r *Redirector) Handler() http.Handler {
	mux := http.NewServeMux()
	r.Mount(mux)
	return mux
}

// Mount adds the redirector's routes to mux.
func (r *Redirector) Mount(mux *http.ServeMux) {
	mux.Handle("GET /play/{app}/{name}", withCORS(http.HandlerFunc(r.play)))
	mux.Handle("GET /api/v1/mesh", withCORS(http.HandlerFunc(r.meshAPI)))
	r.mountSteering(mux)
	for _, p := range []string{"/play/{app}/{name}", "/api/v1/mesh", "/steer/{proto}/{app}/{name}"} {
		mux.HandleFunc("OPTIONS "+p, preflight)
	}
}

func validName(s string) bool {
	if s == "" || len(s) > bus.MaxTokenLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f || s[i] == '/' || s[i] == '?' || s[i] == '#' || s[i] == '%' {
			return false
		}
	}
	return true
}

// viewerAddr is the viewer's address: the peer, or the nearest untrusted
// hop of X-Forwarded-For when the peer is a trusted proxy, or ?ip= in dev.
func (r *Redirector) viewerAddr(req *http.Request) (netip.Addr, bool) {
	if r.cfg.DevIP {
		if s := req.URL.Query().Get("ip"); s != "" {
			a, err := netip.ParseAddr(s)
			return a.Unmap(), err == nil
		}
	}
	ap, err := netip.ParseAddrPort(req.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	addr := ap.Addr().Unmap()
	if !r.trusted(addr) {
		return addr, true
	}
	hops := req.Header.Values("X-Forwarded-For")
	var all []string
	for _, h := range hops {
		all = append(all, strings.Split(h, ",")...)
	}
	if len(all) > 64 {
		all = all[len(all)-64:]
	}
	for i := len(all) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(all[i]))
		if err != nil {
			return addr, true
		}
		a = a.Unmap()
		if !r.trusted(a) {
			return a, true
		}
	}
	return addr, true
}

func (r *Redirector) trusted(a netip.Addr) bool {
	for _, p := range r.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (r *Redirector) play(w http.ResponseWriter, req *http.Request) {
	app, name := req.PathValue("app"), req.PathValue("name")
	if !validName(app) || !validName(name) {
		http.Error(w, "bad stream name", http.StatusBadRequest)
		return
	}
	if isMediaFile(name) {
		r.subresource(w, req, app, name)
		return
	}
	proto := req.URL.Query().Get("proto")
	switch proto {
	case "":
		proto = "rtmp"
	case "rtmp", "hls", "dash":
	default:
		http.Error(w, "proto must be rtmp, hls or dash", http.StatusBadRequest)
		return
	}
	// format=ts (HLS): the relay's MPEG-TS playlist, for players that
	// cannot play fMP4 HLS (docs/hls-dash.md); format=fmp4 the fMP4
	// ladder. Without a format, the players that lose the stream at a new
	// fMP4 init segment get MPEG-TS (formats.go).
	hlsFile := "index.m3u8"
	switch f := req.URL.Query().Get("format"); f {
	case "":
		if proto == "hls" {
			w.Header().Add("Vary", "User-Agent")
			if prefersTS(req.UserAgent()) {
				hlsFile = tsPlaylist
			}
		}
	case "ts", "fmp4":
		if proto != "hls" {
			http.Error(w, "format="+f+" is for proto=hls", http.StatusBadRequest)
			return
		}
		if f == "ts" {
			hlsFile = tsPlaylist
		}
	default:
		http.Error(w, "format must be ts or fmp4 (or none)", http.StatusBadRequest)
		return
	}
	stream := app + "/" + name
	g := r.mesh.Graph()
	v, viewerLoc := graph.NoVertex, ""
	if addr, ok := r.viewerAddr(req); ok {
		if loc, err := r.cfg.Geo.Lookup(addr); err == nil {
			if id, _ := r.matcher.Match(loc); id != "" {
				if vv, ok := g.Vertex(id); ok {
					v, viewerLoc = vv, id
				}
			}
		}
	}
	now := time.Now()
	var claims placement.Claims
	tok := req.URL.Query().Get(TokenParam)
	if tok == "" {
		if c, err := req.Cookie(TokenCookie); err == nil {
			tok = c.Value
		}
	}
	if tok != "" && len(tok) <= placement.MaxTokenLen {
		if c, err := placement.Verify(r.cfg.TokenKey, tok, now); err == nil && c.Stream == stream {
			claims = c
		}
	}

	var res placement.Result
	sid, known := r.mesh.Stream(stream)
	if known && v != graph.NoVertex {
		rnd := r.rnd.Get().(*mrand.Rand)
		res = r.mesh.ChooseSticky(v, sid, claims, rnd)
		r.rnd.Put(rnd)
	} else {
		res = placement.Result{Server: r.mesh.Primary(), Reason: placement.ReasonUnknown}
		if v != graph.NoVertex {
			res.Dist = r.distTo(v, res.Server)
			res.Nearest = res.Dist
		}
	}
	if v != graph.NoVertex {
		r.noteDemand(stream, v, res.Nearest, known && res.Server == placement.NoServer)
	}
	if res.Server == placement.NoServer && r.cfg.OverflowURL != "" && proto != "rtmp" {
		path := "/hls/" + app + "/" + name + "/" + hlsFile
		if proto == "dash" {
			path = "/dash/" + app + "/" + name + "/manifest.mpd"
		}
		pt := r.playToken(app, name)
		target := strings.TrimRight(r.cfg.OverflowURL, "/") + withPlayToken(path, pt)
		r.answers.overflow.Add(1)
		w.Header().Set("Cache-Control", "no-store")
		if strings.Contains(req.Header.Get("Accept"), "application/json") {
			writeJSON(w, http.StatusOK, Choice{Relay: "overflow", Distance: -1, Reason: "every server is at capacity: external CDN",
				URL: target, Viewer: viewerLoc, PlayToken: pt})
			return
		}
		http.Redirect(w, req, target, http.StatusFound)
		return
	}
	if res.Server == placement.NoServer {
		r.answers.full.Add(1)
		w.Header().Set("Retry-After", "5")
		http.Error(w, "all servers are full, retry later", http.StatusServiceUnavailable)
		return
	}
	if known {
		r.mesh.AddViewers(res.Server, sid, 1)
	}
	r.answers.placed(res.Reason)
	srv := r.mesh.Server(res.Server)
	rtmpAddr, httpAddr := r.addrs(res.Server)
	rtmpScheme, httpScheme := "rtmp", "http"
	if r.wantTLS(req) {
		rtmpsAddr, httpsAddr := r.tlsAddrs(res.Server)
		if rtmpsAddr != "" {
			rtmpAddr, rtmpScheme = rtmpsAddr, "rtmps"
		}
		if httpsAddr != "" {
			httpAddr, httpScheme = httpsAddr, "https"
		}
	}
	var target, path string
	switch proto {
	case "rtmp":
		target = rtmpScheme + "://" + rtmpAddr + "/" + app + "/" + name
	case "hls":
		path = "/hls/" + app + "/" + name + "/" + hlsFile
	case "dash":
		path = "/dash/" + app + "/" + name + "/manifest.mpd"
	}
	pt := r.playToken(app, name)
	if proto == "rtmp" {
		target = withPlayToken(target, pt)
	} else {
		target = httpScheme + "://" + httpAddr + withPlayToken(path, pt)
	}
	// Placed farther than a relay of the stream that is starting, or than a
	// server that is down (the viewer is displaced by a relay's death or a
	// region's outage): the token is provisional (the viewer moves once a
	// nearer carrier can take it).
	prov := known && (r.provisional(stream, v, res.Dist) || r.mesh.DownNearer(v, res.Dist))
	token, err := placement.Sign(r.cfg.TokenKey, placement.Claims{Server: srv.ID, Stream: stream, Expires: now.Add(r.cfg.TokenTTL), Provisional: prov})
	if err == nil {
		// Path /play/{app}/: the token also comes with the files a DASH
		// client resolves against /play/{app}/{name} (subresource.go).
		http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: token, Path: "/play/" + app + "/",
			MaxAge: int(r.cfg.TokenTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode})
	}
	w.Header().Set("Cache-Control", "no-store")
	if strings.Contains(req.Header.Get("Accept"), "application/json") {
		dist := float64(res.Dist)
		if dist > 1e30 {
			dist = -1
		}
		writeJSON(w, http.StatusOK, Choice{Relay: srv.ID, Location: srv.Location, Distance: dist, Reason: res.Reason.String(),
			URL: target, Token: token, Viewer: viewerLoc, PlayToken: pt, Provisional: prov})
		return
	}
	http.Redirect(w, req, target, http.StatusFound)
}

func (r *Redirector) playToken(app, name string) string {
	if r.cfg.PlayToken == nil {
		return ""
	}
	return r.cfg.PlayToken(app, name)
}

// withPlayToken adds the play token to an RTMP URL as ?token=, and to an
// HLS/DASH path (/hls/APP/NAME/index.m3u8) as the directory
// /hls/APP/NAME/t/TOKEN/index.m3u8, where the relays look for it: the
// playlists' relative URIs then carry it to every playlist, part and
// segment (players resolve them against the path; the query is dropped).
func withPlayToken(target, pt string) string {
	if pt == "" {
		return target
	}
	if strings.HasPrefix(target, "/") {
		dir, file := target[:strings.LastIndexByte(target, '/')], target[strings.LastIndexByte(target, '/')+1:]
		return dir + "/t/" + pt + "/" + file
	}
	return target + "?" + PlayParam + "=" + pt
}

// distTo is the graph distance from v to server id's location.
func (r *Redirector) distTo(v graph.VertexID, id placement.ServerID) float32 {
	t := r.mesh.Table()
	if t == nil || id == placement.NoServer {
		return float32(1e38)
	}
	j := t.DestIndex(r.mesh.Server(id).Vertex)
	if j < 0 {
		return float32(1e38)
	}
	return t.Dist(v, j)
}

// addrs returns where a server serves: its reported addresses, else the graph's.
func (r *Redirector) addrs(id placement.ServerID) (rtmpAddr, httpAddr string) {
	srv := r.mesh.Server(id)
	rtmpAddr, httpAddr = srv.RTMP, srv.HTTP
	r.mu.RLock()
	if rs := r.relays[id]; rs != nil {
		if rs.status.RTMP != "" {
			rtmpAddr = rs.status.RTMP
		}
		if rs.status.HTTP != "" {
			httpAddr = rs.status.HTTP
		}
	}
	r.mu.RUnlock()
	return rtmpAddr, httpAddr
}

// wantTLS reports whether the viewer should be sent to RTMPS/HTTPS (where
// the server reports such a listener): ?tls=1, or ?tls absent and the
// request came over HTTPS (directly, or per X-Forwarded-Proto from a
// trusted proxy), so a page served over HTTPS gets HTTPS playlists.
func (r *Redirector) wantTLS(req *http.Request) bool {
	switch req.URL.Query().Get("tls") {
	case "1", "true":
		return true
	case "0", "false":
		return false
	}
	if req.TLS != nil {
		return true
	}
	if ap, err := netip.ParseAddrPort(req.RemoteAddr); err == nil && r.trusted(ap.Addr().Unmap()) {
		return strings.EqualFold(req.Header.Get("X-Forwarded-Proto"), "https")
	}
	return false
}

// tlsAddrs returns where a server serves RTMPS and HTTPS ("" for none), as
// it reports them.
func (r *Redirector) tlsAddrs(id placement.ServerID) (rtmpsAddr, httpsAddr string) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if rs := r.relays[id]; rs != nil {
		return rs.status.RTMPS, rs.status.HTTPS
	}
	return "", ""
}

// MeshRelay is one server in the mesh API.
type MeshRelay struct {
	ID       string `json:"id"`
	Location string `json:"location"`
	Role     string `json:"role"`
	RTMPURL  string `json:"rtmp_url"`
	HTTPURL  string `json:"http_url"`
	Status   string `json:"status"`  // up, down, draining
	Viewers  int64  `json:"viewers"` // every protocol
	Capacity int    `json:"capacity"`
	// Protocols breaks the viewers it reported down by protocol.
	Protocols []bus.ProtocolLoad `json:"protocols,omitempty"`
}

// MeshStream is one stream in the mesh API.
type MeshStream struct {
	App    string   `json:"app"`
	Name   string   `json:"name"`
	Relays []string `json:"relays"`
	// Viewers and Protocols: the stream's viewers on every server that
	// reports it (the primary too), in all and by protocol.
	Viewers   int                `json:"viewers"`
	Protocols []bus.ProtocolLoad `json:"protocols,omitempty"`
	// Live: a server that is up reports media flowing. The details come
	// from the primary's status (else a relay's): codecs, picture size and
	// ingest bitrate.
	Live        bool   `json:"live"`
	VideoCodec  string `json:"video_codec,omitempty"`
	AudioCodec  string `json:"audio_codec,omitempty"`
	Width       int    `json:"width,omitempty"`
	Height      int    `json:"height,omitempty"`
	BitrateKbps int    `json:"bitrate_kbps,omitempty"`
}

// MeshPrimary is the primary in the mesh API.
type MeshPrimary struct {
	ID      string `json:"id"`
	RTMPURL string `json:"rtmp_url"`
	HTTPURL string `json:"http_url"`
	// Status is "up" once the primary reports (its URLs are then the
	// ones it listens on), "down" before (the URLs are the configured
	// ones).
	Status string `json:"status"`
}

// MeshView is the answer of /api/v1/mesh.
type MeshView struct {
	Relays  []MeshRelay  `json:"relays"`
	Streams []MeshStream `json:"streams"`
	Bonus   []BonusInfo  `json:"bonus"`
	Primary MeshPrimary  `json:"primary"`
}

// View describes the mesh as this redirector sees it.
func (r *Redirector) View() MeshView {
	mv := MeshView{Relays: []MeshRelay{}, Streams: []MeshStream{}, Bonus: []BonusInfo{}}
	for i, s := range r.mesh.Graph().Servers() {
		id := placement.ServerID(i)
		ra, ha := r.addrs(id)
		if id == r.mesh.Primary() {
			mv.Primary = MeshPrimary{ID: s.ID, RTMPURL: "rtmp://" + ra, HTTPURL: "http://" + ha, Status: "down"}
			r.mu.RLock()
			if rs := r.relays[id]; rs != nil && rs.up {
				mv.Primary.Status = "up"
			}
			r.mu.RUnlock()
			continue
		}
		status := "down"
		r.mu.RLock()
		if rs := r.relays[id]; rs != nil && rs.up {
			status = "up"
			if rs.status.Draining || r.mesh.Draining(id) {
				status = "draining"
			}
		}
		r.mu.RUnlock()
		viewers, _ := r.mesh.Load(id)
		mv.Relays = append(mv.Relays, MeshRelay{ID: s.ID, Location: s.Location, Role: string(s.Role),
			RTMPURL: "rtmp://" + ra, HTTPURL: "http://" + ha, Status: status, Viewers: viewers, Capacity: s.CapacityViewers,
			Protocols: r.relayProtocols(id)})
	}
	r.mu.RLock()
	for _, p := range r.placements {
		ms := MeshStream{App: p.App, Name: p.Name, Relays: []string{}}
		ms.Viewers, ms.Protocols = r.streamProtocols(p.App, p.Name)
		for _, rel := range p.Relays {
			if rel.State == bus.StateReady {
				ms.Relays = append(ms.Relays, rel.Server)
			}
		}
		mv.Streams = append(mv.Streams, ms)
	}
	mv.Streams = r.addLiveStreams(mv.Streams)
	r.mu.RUnlock()
	sort.Slice(mv.Streams, func(i, j int) bool {
		return mv.Streams[i].App+"/"+mv.Streams[i].Name < mv.Streams[j].App+"/"+mv.Streams[j].Name
	})
	if r.cfg.Bonus != nil {
		mv.Bonus = append(mv.Bonus, r.cfg.Bonus()...)
	}
	return mv
}

func (r *Redirector) meshAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, r.View())
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// ParseTrusted parses a comma-separated list of addresses and prefixes.
func ParseTrusted(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, err
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, err
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
