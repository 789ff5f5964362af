package redirector

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// Content steering (docs/hls-dash.md). A relay's multivariant playlist
// names this redirector as its steering server (EXT-X-CONTENT-STEERING,
// pathway = the relay's id) and so does its MPD (ContentSteering, with a
// BaseURL whose serviceLocation is the relay's id). Players ask
// GET /steer/{hls|dash}/{app}/{name}?base=ID every TTL; the answer lists the
// servers that carry the stream and are up and not draining, nearest to the
// player first (the placement's graph distance; the base relay's location
// when the player's address says nothing), each other server as a clone of
// the base pathway with its own URLs. A relay that dies or drains is left
// out of the next answer; a player whose relay fails moves to the next
// pathway of the last answer at once (hls.js and dash.js do).

// DefaultSteeringTTL is how long a player keeps a steering answer.
const DefaultSteeringTTL = 5 * time.Second

// DefaultDASHSteeringTTL is the TTL of the DASH answers. dash.js picks the
// server of each segment request by its last answer (a segment's retries
// go to the same URL, and a server is blacklisted only after them): with
// 2 s, every dash.js player has an answer without a dead relay within 2 s
// of the redirector dropping it (docs/hls-dash.md, *Content steering*).
const DefaultDASHSteeringTTL = 2 * time.Second

// maxPathways bounds the pathways of one answer.
const maxPathways = 4

// hlsRenditions are the stems of the packager's media playlists (full.m3u8,
// …, and the MPEG-TS playlist's ts_full.m3u8, ts_audio.m3u8), which it also writes as STABLE-VARIANT-ID and STABLE-RENDITION-ID:
// a clone's URIs are given per variant, since HOST replaces a host name
// and relays may differ by port alone.
var hlsRenditions = []string{"full", "lite", "key", "audio", "ts_full", "ts_audio"}

// tsPlaylist is the packager's MPEG-TS playlist (a multivariant playlist
// whose variant is ts_full.m3u8, or ts_audio.m3u8 without video): what
// /play?proto=hls&format=ts sends a player to.
const tsPlaylist = "ts.m3u8"

func (r *Redirector) mountSteering(mux *http.ServeMux) {
	mux.Handle("GET /steer/{proto}/{app}/{name}", withCORS(http.HandlerFunc(r.steer)))
	mux.Handle("GET /steer/dash/{app}/{name}/manifest.mpd", withCORS(http.HandlerFunc(r.steerManifest)))
}

// steerManifest answers GET /steer/dash/{app}/{name}/manifest.mpd?base=ID,
// the Location of the MPDs of servers that name this redirector for
// steering (packager/steering.go): a redirect to the MPD on the first
// server of the steering answer, the base one while it is up and nearest.
// It is how dash.js refreshes its manifest: dash.js stops refreshing for
// good when one refresh fails, and retries a failed one at the same URL, so
// a manifest location on the relay itself ends the stream for its players
// when the relay dies; here the retries land on a server that is up. The
// redirect counts no viewer and no demand (a player refreshes every
// second or so; /play counts the player once).
func (r *Redirector) steerManifest(w http.ResponseWriter, req *http.Request) {
	app, name := req.PathValue("app"), req.PathValue("name")
	if !validName(app) || !validName(name) {
		http.Error(w, "bad stream name", http.StatusBadRequest)
		return
	}
	base := req.URL.Query().Get("base")
	baseID, baseOK := r.mesh.ServerByID(base)
	v, _ := r.viewerVertex(req)
	if v == graph.NoVertex && baseOK && validPathway(base) {
		v = r.mesh.Server(baseID).Vertex
	}
	if !baseOK {
		baseID = placement.NoServer
	}
	ids := r.pathways(app+"/"+name, v, baseID)
	if len(ids) == 0 {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "no server carries the stream", http.StatusServiceUnavailable)
		return
	}
	_, httpAddr := r.addrs(ids[0])
	scheme := "http"
	if r.wantTLS(req) {
		if _, httpsAddr := r.tlsAddrs(ids[0]); httpsAddr != "" {
			httpAddr, scheme = httpsAddr, "https"
		}
	}
	r.answers.steered.Add(1)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, req, scheme+"://"+httpAddr+withPlayToken("/dash/"+app+"/"+name+"/manifest.mpd", r.playToken(app, name)), http.StatusFound)
}

// uriReplacement is the URI-REPLACEMENT of a pathway clone.
type uriReplacement struct {
	Host             string            `json:"HOST"`
	PerVariantURIs   map[string]string `json:"PER-VARIANT-URIS,omitempty"`
	PerRenditionURIs map[string]string `json:"PER-RENDITION-URIS,omitempty"`
}

type pathwayClone struct {
	BaseID         string         `json:"BASE-ID"`
	ID             string         `json:"ID"`
	URIReplacement uriReplacement `json:"URI-REPLACEMENT"`
}

// SteeringManifest is the answer of /steer: HLS (PATHWAY-PRIORITY) or DASH
// (SERVICE-LOCATION-PRIORITY, and PATHWAY-PRIORITY alike for dash.js)
// content steering, version 1.
type SteeringManifest struct {
	Version         int            `json:"VERSION"`
	TTL             int            `json:"TTL"`
	ReloadURI       string         `json:"RELOAD-URI,omitempty"`
	PathwayPriority []string       `json:"PATHWAY-PRIORITY,omitempty"`
	ServicePriority []string       `json:"SERVICE-LOCATION-PRIORITY,omitempty"`
	PathwayClones   []pathwayClone `json:"PATHWAY-CLONES,omitempty"`
	ViewerLocation  string         `json:"X-RELAYMESH-VIEWER-LOCATION,omitempty"` // for debugging; players ignore it
}

// validPathway accepts the ids HLS allows as a PATHWAY-ID.
func validPathway(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

func (r *Redirector) steer(w http.ResponseWriter, req *http.Request) {
	proto, app, name := req.PathValue("proto"), req.PathValue("app"), req.PathValue("name")
	if (proto != "hls" && proto != "dash") || !validName(app) || !validName(name) {
		http.Error(w, "want /steer/{hls|dash}/{app}/{name}", http.StatusBadRequest)
		return
	}
	base := req.URL.Query().Get("base")
	baseID, baseOK := r.mesh.ServerByID(base)
	if !validPathway(base) {
		baseOK = false
	}
	// Where the viewer is: its address, else the relay it plays from.
	v, viewerLoc := r.viewerVertex(req)
	if v == graph.NoVertex && baseOK {
		v = r.mesh.Server(baseID).Vertex
	}
	pathBase := baseID
	if !baseOK {
		pathBase = placement.NoServer
	}
	ids := r.pathways(app+"/"+name, v, pathBase)
	ttl := int(r.cfg.SteeringTTL / time.Second)
	if proto == "dash" {
		ttl = int(r.cfg.DASHSteeringTTL / time.Second)
	}
	m := SteeringManifest{Version: 1, TTL: max(ttl, 1), ViewerLocation: viewerLoc,
		ReloadURI: "/steer/" + proto + "/" + url.PathEscape(app) + "/" + url.PathEscape(name) + "?base=" + url.QueryEscape(base)}
	var prio []string
	for _, id := range ids {
		prio = append(prio, r.mesh.Server(id).ID)
	}
	if proto == "dash" {
		m.PathwayClones = r.dashClones(ids, r.dashBases(baseID, baseOK, req.URL.Query().Get("_DASH_pathway")))
	}
	for _, id := range ids {
		srv := r.mesh.Server(id)
		if !baseOK || id == baseID || proto == "dash" {
			continue
		}
		_, httpAddr := r.addrs(id)
		c := pathwayClone{BaseID: base, ID: srv.ID}
		host := httpAddr
		if h, _, err := net.SplitHostPort(httpAddr); err == nil {
			host = h
		}
		c.URIReplacement.Host = host
		c.URIReplacement.PerVariantURIs = map[string]string{}
		c.URIReplacement.PerRenditionURIs = map[string]string{}
		for _, stem := range hlsRenditions {
			u := "http://" + httpAddr + "/hls/" + app + "/" + name + "/" + stem + ".m3u8"
			c.URIReplacement.PerVariantURIs[stem] = u
			c.URIReplacement.PerRenditionURIs[stem] = u
		}
		m.PathwayClones = append(m.PathwayClones, c)
	}
	// DASH: the DASH-IF name is SERVICE-LOCATION-PRIORITY, but dash.js
	// (5.2.1 here) reads PATHWAY-PRIORITY, the HLS name, and without it
	// follows no priority at all: it leaves a dead relay only by
	// blacklisting it after a segment's retries, and refreshes its manifest
	// from the dead relay still. A DASH answer carries both.
	m.PathwayPriority = prio
	if proto == "dash" {
		m.ServicePriority = prio
	}
	r.answers.steered.Add(1)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, m)
}

// dashClones are the PATHWAY-CLONES of a DASH answer (HOST
// http://host:port), for the servers of ids in their order: each server of
// ids is a clone of each server before it, and of every server the player
// may still have an MPD from that is not in ids (the base it started on,
// the service locations its request reports in _DASH_pathway: a relay that
// died or drains). dash.js asks again with the RELOAD-URI of its first
// answer, which names the base it started on, while the MPDs it refreshes
// come from the server it moved to: a clone per possible base lets it
// synthesize the other servers' BaseURLs from whichever MPD it has. No
// server is a clone of one after it: an MPD comes from the first server of
// the redirector's answer at the time (steerManifest), and a player whose
// steering answer is older (a TTL) then stays on the MPD's server instead
// of going back to one the redirector has since dropped. That is what
// moves dash.js off a dead relay at its first manifest refresh after the
// death (about a second), even when its steering answer still names it.
func (r *Redirector) dashClones(ids []placement.ServerID, gone []placement.ServerID) []pathwayClone {
	var out []pathwayClone
	add := func(b placement.ServerID, to []placement.ServerID) {
		for _, id := range to {
			_, httpAddr := r.addrs(id)
			c := pathwayClone{BaseID: r.mesh.Server(b).ID, ID: r.mesh.Server(id).ID}
			c.URIReplacement.Host = "http://" + httpAddr
			out = append(out, c)
		}
	}
	for _, b := range gone {
		if !slices.Contains(ids, b) {
			add(b, ids)
		}
	}
	for i, b := range ids {
		add(b, ids[i+1:])
	}
	return out
}

// maxReportedPathways bounds the service locations of _DASH_pathway taken
// as bases (dashClones).
const maxReportedPathways = 4

// dashBases are the servers a DASH player may have an MPD from: base (when
// known) and the service locations of its _DASH_pathway ("a,b", quoted),
// once each.
func (r *Redirector) dashBases(base placement.ServerID, baseOK bool, reported string) []placement.ServerID {
	var out []placement.ServerID
	if baseOK {
		out = append(out, base)
	}
	reported = strings.Trim(reported, `"`)
	for n, p := range strings.Split(reported, ",") {
		if n == maxReportedPathways {
			break
		}
		if !validPathway(p) {
			continue
		}
		if id, ok := r.mesh.ServerByID(p); ok && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// viewerVertex locates the viewer of req in the graph.
func (r *Redirector) viewerVertex(req *http.Request) (graph.VertexID, string) {
	addr, ok := r.viewerAddr(req)
	if !ok {
		return graph.NoVertex, ""
	}
	loc, err := r.cfg.Geo.Lookup(addr)
	if err != nil {
		return graph.NoVertex, ""
	}
	id, _ := r.matcher.Match(loc)
	if id == "" {
		return graph.NoVertex, ""
	}
	v, ok := r.mesh.Graph().Vertex(id)
	if !ok {
		return graph.NoVertex, ""
	}
	return v, id
}

// pathways lists the servers a player of stream at v may use, best first:
// the carriers that are up and not draining (placed by the orchestrator or
// reporting the stream live), and the primary. Those with segments of the
// stream packaged (the base server, where the player is, counts as such)
// come before those without: a player moved to a server whose packaging
// has just started gets 404s and stalls. Then by graph distance from v,
// the base server first among equals, then the less loaded; at most
// maxPathways.
func (r *Redirector) pathways(stream string, v graph.VertexID, base placement.ServerID) []placement.ServerID {
	cands := []placement.ServerID{r.mesh.Primary()}
	if sid, ok := r.mesh.Stream(stream); ok {
		cands = append(cands, r.mesh.Carriers(sid)...)
	}
	type cand struct {
		id    placement.ServerID
		ready bool
		dist  float32
		load  float64
	}
	var cs []cand
	r.mu.RLock()
	for _, id := range r.carriers[stream] {
		if !slices.Contains(cands, id) {
			cands = append(cands, id)
		}
	}
	for _, id := range cands {
		if id == placement.NoServer || !validPathway(r.mesh.Server(id).ID) {
			continue
		}
		if id != r.mesh.Primary() {
			rs := r.relays[id]
			if rs == nil || !rs.up || rs.status.Draining || r.mesh.Draining(id) {
				continue
			}
		}
		c := cand{id: id, ready: id == base || r.httpReadyLocked(id, stream), dist: float32(1e38)}
		if v != graph.NoVertex {
			c.dist = r.distTo(v, id)
		}
		viewers, _ := r.mesh.Load(id)
		if capV := r.mesh.Server(id).CapacityViewers; capV > 0 {
			c.load = float64(viewers) / float64(capV)
		}
		cs = append(cs, c)
	}
	r.mu.RUnlock()
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].ready != cs[j].ready {
			return cs[i].ready
		}
		if cs[i].dist != cs[j].dist {
			return cs[i].dist < cs[j].dist
		}
		if (cs[i].id == base) != (cs[j].id == base) {
			return cs[i].id == base
		}
		return cs[i].load < cs[j].load
	})
	out := make([]placement.ServerID, 0, min(len(cs), maxPathways))
	for _, c := range cs {
		if len(out) == maxPathways {
			break
		}
		out = append(out, c.id)
	}
	return out
}
