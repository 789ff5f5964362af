package gate

import (
	"net/http"
	"strings"
	"time"

	"github.com/relaymesh/relaymesh/internal/hooks"
)

// PathSegment introduces the credential in an HLS/DASH path:
//
//	/hls/{app}/{name}/t/{token-or-key}/{file}
//	/dash/{app}/{name}/t/{token-or-key}/{file}
//
// The packager's playlists and manifests refer to parts, segments and
// renditions by relative URIs, so a player resolves every one of them under
// the same /t/{token}/ directory: the credential reaches each request
// without cookies and without rewriting what the packager renders.
const PathSegment = "t"

// HLSPath and DASHPath are the entry URLs' paths carrying cred.
func HLSPath(app, name, cred string) string {
	return "/hls/" + app + "/" + name + "/" + PathSegment + "/" + cred + "/index.m3u8"
}

// DASHPath is the DASH manifest's path carrying cred.
func DASHPath(app, name, cred string) string {
	return "/dash/" + app + "/" + name + "/" + PathSegment + "/" + cred + "/manifest.mpd"
}

// HTTP returns next (the packager's handler for /hls/ and /dash/) behind
// the gate. A credential comes in the path (above), in ?token= or ?key=,
// or as "Authorization: Bearer". Without one a protected stream answers
// 401; with a wrong, expired or other-stream one, or when on_play refuses,
// 403. A playlist or manifest asked for with the credential in its query
// is redirected (302) to the path form, so what it lists carries it too.
// on_play is asked for the entry points only (index.m3u8, ts.m3u8 and
// manifest.mpd), and an allowing
// answer is remembered for 30 s per viewer address, stream and query.
// A viewer's session (by address and stream) runs from its first allowed
// request until it has made none for HTTPIdle (see Run); while it runs,
// its token keeps it playing past the token's expiry (up to SessionMax),
// so only starting to play needs an unexpired token. on_stop is told when
// it ends.
func (g *Gate) HTTP(next http.Handler) http.Handler {
	if g == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto, rest, ok := splitProto(r.URL.Path)
		if !ok || (proto == "dash" && rest == "time") || r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		parts := strings.Split(rest, "/")
		var app, name, file, cred string
		fromPath := false
		switch {
		case len(parts) == 5 && parts[2] == PathSegment:
			app, name, cred, file = parts[0], parts[1], parts[3], parts[4]
			fromPath = true
		case len(parts) == 3:
			app, name, file = parts[0], parts[1], parts[2]
		default:
			next.ServeHTTP(w, r)
			return
		}
		if fromPath {
			// The packager sees the plain path.
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/" + proto + "/" + app + "/" + name + "/" + file
			r2.URL.RawPath = ""
			r = r2
		}
		q := r.URL.Query()
		if cred == "" {
			if cred = q.Get(TokenParam); cred == "" {
				if cred = q.Get(KeyParam); cred == "" {
					if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
						cred = strings.TrimSpace(a[7:])
					}
				}
			}
		}
		protected := g.Protected(app)
		now := time.Now()
		ip := hostOf(r.RemoteAddr)
		sk := sessionKey{proto, app, name, ip}
		if protected {
			if err := g.CheckCredential(app, name, cred); err != nil && !g.carriesOn(err, cred, sk, now) {
				g.count(proto, err)
				code := http.StatusForbidden
				if cred == "" {
					code = http.StatusUnauthorized
					w.Header().Set("WWW-Authenticate", `Bearer realm="relaymesh play"`)
				}
				refuse(w, code, err.Error())
				return
			}
		}
		entry := file == "index.m3u8" || file == "manifest.mpd" || file == "ts.m3u8"
		if entry && g.cfg.Hooks.Has(hooks.OnPlay) {
			b := hooks.Body{Action: hooks.OnPlay, IP: ip, Proto: proto, App: app, Stream: name, Param: r.URL.RawQuery}
			if fromPath {
				b.Param = joinQuery(TokenParam+"="+cred, b.Param)
			}
			key := proto + "\x00" + app + "\x00" + name + "\x00" + b.IP + "\x00" + b.Param
			if !g.cache.allowed(key, now) {
				if err := g.hook(r.Context(), b); err != nil {
					g.count(proto, err)
					refuse(w, http.StatusForbidden, err.Error())
					return
				}
				g.cache.add(key, now)
			}
		}
		if protected || g.cfg.Hooks.Has(hooks.OnStop) {
			g.sessions.touch(sk, hooks.Body{IP: ip, Proto: proto, App: app, Stream: name, Param: stripCredentials(q).Encode()}, now)
		}
		stripped := stripCredentials(q)
		if !fromPath && protected && PathSafe(cred) && len(stripped) != len(q) &&
			(strings.HasSuffix(file, ".m3u8") || strings.HasSuffix(file, ".mpd")) {
			// Move the credential from the query into the path.
			loc := "/" + proto + "/" + app + "/" + name + "/" + PathSegment + "/" + cred + "/" + file
			if e := stripped.Encode(); e != "" {
				loc += "?" + e
			}
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Access-Control-Allow-Origin", "*")
			http.Redirect(w, r, loc, http.StatusFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// PathSafe reports whether a credential can be a path segment as it is:
// non-empty, at most 256 of [A-Za-z0-9._~-], not "." or "..". Tokens
// always are; play keys must be (config check).
func PathSafe(s string) bool {
	if s == "" || len(s) > 256 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '~', c == '-':
		default:
			return false
		}
	}
	return true
}

func joinQuery(a, b string) string {
	if b == "" {
		return a
	}
	return a + "&" + b
}

func splitProto(p string) (proto, rest string, ok bool) {
	switch {
	case strings.HasPrefix(p, "/hls/"):
		return "hls", p[len("/hls/"):], true
	case strings.HasPrefix(p, "/dash/"):
		return "dash", p[len("/dash/"):], true
	}
	return "", "", false
}

func refuse(w http.ResponseWriter, code int, reason string) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Access-Control-Allow-Origin", "*")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(reason + "\n"))
}
