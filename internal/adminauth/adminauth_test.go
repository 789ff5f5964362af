package adminauth

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestPolicy(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	do := func(h http.Handler, method, path, remote, token string) int {
		r := httptest.NewRequest(method, path, nil)
		r.RemoteAddr = remote
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	const call, local, remote = "/api/v1/apps/live/scopes/cam/call", "127.0.0.1:5000", "203.0.113.9:5000"
	cases := []struct {
		name                        string
		p                           Policy
		admin                       bool
		method, path, remote, token string
		want                        int
	}{
		{"token: none", Policy{Token: "s"}, false, "POST", call, local, "", 401},
		{"token: wrong", Policy{Token: "s"}, false, "POST", call, remote, "x", 401},
		{"token: right", Policy{Token: "s"}, false, "POST", call, remote, "s", 200},
		{"token: status public", Policy{Token: "s"}, false, "GET", "/api/v1/streams", remote, "", 200},
		{"token: status private", Policy{Token: "s", PrivateStatus: true}, false, "GET", "/metrics", remote, "", 401},
		{"token: healthz", Policy{Token: "s", PrivateStatus: true}, false, "GET", "/healthz", remote, "", 200},
		{"token: hls", Policy{Token: "s"}, false, "GET", "/hls/live/cam/index.m3u8", remote, "", 200},
		{"token: a POST anywhere", Policy{Token: "s"}, false, "POST", "/drain", remote, "", 401},
		{"default: loopback", Policy{}, false, "POST", call, local, "", 200},
		{"default: remote", Policy{}, false, "POST", call, remote, "", 401},
		{"separate: public", Policy{Separate: true}, false, "POST", call, local, "", 404},
		{"separate+token: public", Policy{Separate: true, Token: "s"}, false, "POST", call, local, "s", 404},
		{"default: status private, remote", Policy{PrivateStatus: true}, false, "GET", "/metrics", remote, "", 401},
		{"default: status private, local", Policy{PrivateStatus: true}, false, "GET", "/metrics", local, "", 200},
		{"separate: admin", Policy{Separate: true}, true, "POST", call, remote, "", 200},
		{"separate+token: admin none", Policy{Separate: true, Token: "s"}, true, "POST", call, local, "", 401},
		{"separate+token: admin right", Policy{Separate: true, Token: "s"}, true, "DELETE", "/api/v1/x", local, "s", 200},
		{"separate: status private", Policy{Separate: true, PrivateStatus: true}, false, "GET", "/api/v1/streams", local, "", 404},
		{"separate: admin status", Policy{Separate: true, PrivateStatus: true}, true, "GET", "/api/v1/streams", remote, "", 200},
	}
	basic := httptest.NewRequest("POST", call, nil)
	basic.RemoteAddr = remote
	basic.SetBasicAuth("admin", "s")
	w := httptest.NewRecorder()
	Policy{Token: "s"}.Public(ok).ServeHTTP(w, basic)
	if w.Code != 200 {
		t.Errorf("basic auth with the token as password: %d", w.Code)
	}
	for _, c := range cases {
		h := c.p.Public(ok)
		if c.admin {
			h = c.p.Admin(ok)
		}
		if got := do(h, c.method, c.path, c.remote, c.token); got != c.want {
			t.Errorf("%s: %s %s = %d, want %d", c.name, c.method, c.path, got, c.want)
		}
	}
}
