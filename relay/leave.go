package relay

import (
	"fmt"
	"net/url"
	"strings"
)

// RedirectTo returns where a draining server sends the players of app/name
// (rtmp.LeaveNotice.Redirect), from a configured URL: an http(s) URL is a
// redirector, whose /play/APP/NAME answers with a live relay; an rtmp URL is
// a server that plays every stream (rtmp://HOST[:PORT]/APP/NAME). An empty
// URL gives nil (players are told to leave, not where to go).
func RedirectTo(raw string) (func(app, name string) string, error) {
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("redirect %q: want http(s)://HOST[:PORT][/PATH] or rtmp://HOST[:PORT]", raw)
	}
	base := strings.TrimRight(raw, "/")
	switch u.Scheme {
	case "http", "https":
		return func(app, name string) string {
			return base + "/play/" + url.PathEscape(app) + "/" + url.PathEscape(name)
		}, nil
	case "rtmp", "rtmps":
		if u.Path != "" && u.Path != "/" {
			return nil, fmt.Errorf("redirect %q: an rtmp redirect names a server only (the app and stream are the player's)", raw)
		}
		return func(app, name string) string { return base + "/" + app + "/" + name }, nil
	}
	return nil, fmt.Errorf("redirect %q: scheme must be http, https, rtmp or rtmps", raw)
}
