package serve

import (
	"fmt"
	"net/url"
	"strings"
)

// RedirectTo returns, from a configured URL, where a draining server sends
// the players of app/name (rtmp.LeaveNotice.Redirect) and the clients that
// connect to app (rtmp.LeaveNotice.ConnectRedirect): an http(s) URL is a
// redirector, whose /play/APP/NAME answers with a live relay (connects get
// no redirect: a redirector is no RTMP server); an rtmp URL is a server that
// plays every stream (rtmp://HOST[:PORT]/APP/NAME, connects to
// rtmp://HOST[:PORT]/APP). An empty URL gives nil for both (players are
// told to leave, not where to go).
func RedirectTo(raw string) (LeaveTo, error) {
	if raw == "" {
		return LeaveTo{}, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return LeaveTo{}, fmt.Errorf("redirect %q: want http(s)://HOST[:PORT][/PATH] or rtmp://HOST[:PORT]", raw)
	}
	base := strings.TrimRight(raw, "/")
	switch u.Scheme {
	case "http", "https":
		return LeaveTo{Play: func(app, name string) string {
			return base + "/play/" + url.PathEscape(app) + "/" + url.PathEscape(name)
		}}, nil
	case "rtmp", "rtmps":
		if u.Path != "" && u.Path != "/" {
			return LeaveTo{}, fmt.Errorf("redirect %q: an rtmp redirect names a server only (the app and stream are the player's)", raw)
		}
		return LeaveTo{
			Play:    func(app, name string) string { return base + "/" + app + "/" + name },
			Connect: func(app string) string { return base + "/" + app },
		}, nil
	}
	return LeaveTo{}, fmt.Errorf("redirect %q: scheme must be http, https, rtmp or rtmps", raw)
}

// LeaveTo is where a draining server sends its players (see RedirectTo).
type LeaveTo struct {
	Play    func(app, name string) string // rtmp.LeaveNotice.Redirect
	Connect func(app string) string       // rtmp.LeaveNotice.ConnectRedirect
}
