package redirector

import (
	"net/http"
	"strings"
	"time"

	"github.com/relaymesh/relaymesh/topology/placement"
)

// A DASH client that resolves the MPD's relative URLs against the URL it
// asked (/play/{app}/{name}) rather than the one it was redirected to asks
// the redirector for /play/{app}/{sid}_{rendition}_….{mp4,m4s}. The sticky
// cookie (path /play/{app}/) says which relay and stream it plays: such a
// request is sent on to that relay's file. Without a valid token there is
// nothing to go by: 404. An MPD with an absolute BaseURL (content steering
// writes one) needs none of this.

// isMediaFile reports whether name looks like one of the packager's init
// or media segment names ({sid}_{rendition}_{…}.mp4|.m4s) rather than a
// stream's.
func isMediaFile(name string) bool {
	if !strings.HasSuffix(name, ".mp4") && !strings.HasSuffix(name, ".m4s") {
		return false
	}
	sid, rest, ok := strings.Cut(name, "_")
	return ok && len(sid) == 8 && strings.Contains(rest, "_")
}

func (r *Redirector) subresource(w http.ResponseWriter, req *http.Request, app, file string) {
	w.Header().Set("Cache-Control", "no-store")
	c, err := req.Cookie(TokenCookie)
	if err != nil || len(c.Value) > placement.MaxTokenLen {
		http.Error(w, "no stream: ask /play/{app}/{name}?proto=dash first", http.StatusNotFound)
		return
	}
	claims, err := placement.Verify(r.cfg.TokenKey, c.Value, time.Now())
	if err != nil || !strings.HasPrefix(claims.Stream, app+"/") {
		http.Error(w, "no stream: ask /play/{app}/{name}?proto=dash first", http.StatusNotFound)
		return
	}
	id, ok := r.mesh.ServerByID(claims.Server)
	if !ok {
		http.Error(w, "unknown server", http.StatusNotFound)
		return
	}
	_, httpAddr := r.addrs(id)
	http.Redirect(w, req, "http://"+httpAddr+"/dash/"+claims.Stream+"/"+file, http.StatusFound)
}
