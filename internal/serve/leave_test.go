package serve

import "testing"

func TestRedirectTo(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{"http://rd.example:8090", "http://rd.example:8090/play/live/cam"},
		{"https://rd.example/mesh/", "https://rd.example/mesh/play/live/cam"},
		{"rtmp://edge.example:1935", "rtmp://edge.example:1935/live/cam"},
	} {
		to, err := RedirectTo(c.raw)
		if err != nil {
			t.Fatalf("%s: %v", c.raw, err)
		}
		if got := to.Play("live", "cam"); got != c.want {
			t.Errorf("%s: %s, want %s", c.raw, got, c.want)
		}
	}
	if to, _ := RedirectTo("rtmp://edge.example:1935"); to.Connect("live") != "rtmp://edge.example:1935/live" {
		t.Errorf("connect redirect %q", to.Connect("live"))
	}
	if to, _ := RedirectTo("http://rd.example"); to.Connect != nil {
		t.Error("a redirector given as a connect redirect")
	}
	if to, err := RedirectTo(""); to.Play != nil || to.Connect != nil || err != nil {
		t.Errorf("empty: %v", err)
	}
	for _, bad := range []string{"redirector:8090", "ftp://x", "rtmp://edge/live", "http://"} {
		if _, err := RedirectTo(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
