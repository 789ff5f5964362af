package redirector

import (
	"net"
	"net/http"
	"net/url"
	"sort"
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

// maxPathways bounds the pathways of one answer.
const maxPathways = 4

// hlsRenditions are the stems of the packager's media playlists (full.m3u8,
// …), which it also writes as STABLE-VARIANT-ID and STABLE-RENDITION-ID:
// a clone's URIs are given per variant, since HOST replaces a host name
// and relays may differ by port alone.
var hlsRenditions = []string{"full", "lite", "key", "audio"}

func (r *Redirector) mountSteering(mux *http.ServeMux) {
	mux.Handle("GET /steer/{proto}/{app}/{name}", withCORS(http.HandlerFunc(r.steer)))
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
// (SERVICE-LOCATION-PRIORITY) content steering, version 1.
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
	ids := r.pathways(app+"/"+name, v, baseID)
	ttl := int(r.cfg.SteeringTTL / time.Second)
	m := SteeringManifest{Version: 1, TTL: max(ttl, 1), ViewerLocation: viewerLoc,
		ReloadURI: "/steer/" + proto + "/" + url.PathEscape(app) + "/" + url.PathEscape(name) + "?base=" + url.QueryEscape(base)}
	var prio []string
	for _, id := range ids {
		srv := r.mesh.Server(id)
		prio = append(prio, srv.ID)
		if !baseOK || id == baseID {
			continue
		}
		_, httpAddr := r.addrs(id)
		c := pathwayClone{BaseID: base, ID: srv.ID}
		if proto == "dash" {
			c.URIReplacement.Host = "http://" + httpAddr
		} else {
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
		}
		m.PathwayClones = append(m.PathwayClones, c)
	}
	if proto == "dash" {
		m.ServicePriority = prio
	} else {
		m.PathwayPriority = prio
	}
	r.answers.steered.Add(1)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, m)
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
// the carriers that are up and not draining, and the primary, by graph
// distance from v (the base server first among equals, then the less
// loaded), at most maxPathways.
func (r *Redirector) pathways(stream string, v graph.VertexID, base placement.ServerID) []placement.ServerID {
	cands := []placement.ServerID{r.mesh.Primary()}
	if sid, ok := r.mesh.Stream(stream); ok {
		cands = append(cands, r.mesh.Carriers(sid)...)
	}
	type cand struct {
		id   placement.ServerID
		dist float32
		load float64
	}
	var cs []cand
	r.mu.RLock()
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
		c := cand{id: id, dist: float32(1e38)}
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
