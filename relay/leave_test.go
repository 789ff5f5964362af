package relay

import "testing"

func TestRedirectTo(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{"http://rd.example:8090", "http://rd.example:8090/play/live/cam"},
		{"https://rd.example/mesh/", "https://rd.example/mesh/play/live/cam"},
		{"rtmp://edge.example:1935", "rtmp://edge.example:1935/live/cam"},
	} {
		f, err := RedirectTo(c.raw)
		if err != nil {
			t.Fatalf("%s: %v", c.raw, err)
		}
		if got := f("live", "cam"); got != c.want {
			t.Errorf("%s: %s, want %s", c.raw, got, c.want)
		}
	}
	if f, err := RedirectTo(""); f != nil || err != nil {
		t.Errorf("empty: %v", err)
	}
	for _, bad := range []string{"redirector:8090", "ftp://x", "rtmp://edge/live", "http://"} {
		if _, err := RedirectTo(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
