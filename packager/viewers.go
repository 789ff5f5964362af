package packager

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// viewerSet counts the distinct clients of a stream seen within a window.
type viewerSet struct {
	mu     sync.Mutex
	window time.Duration
	max    int
	seen   map[string]time.Time
	pruned time.Time
}

func newViewerSet(window time.Duration, max int) *viewerSet {
	return &viewerSet{window: window, max: max, seen: make(map[string]time.Time)}
}

// touch records a request of client key and returns the current count.
func (v *viewerSet) touch(key string, now time.Time) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.seen[key]; ok || len(v.seen) < v.max {
		v.seen[key] = now
	}
	if now.Sub(v.pruned) >= time.Second {
		v.pruned = now
		for k, t := range v.seen {
			if now.Sub(t) > v.window {
				delete(v.seen, k)
			}
		}
	}
	return len(v.seen)
}

// maxViewerKey bounds a client-chosen session key.
const maxViewerKey = 128

// viewerKey identifies the client of a request: its session or token query
// parameter when it sends one (players behind one NAT stay distinct), else
// its address.
func viewerKey(r *http.Request) string {
	if r.URL.RawQuery != "" {
		q := r.URL.Query()
		for _, name := range []string{"session", "token"} {
			if s := q.Get(name); s != "" && len(s) <= maxViewerKey {
				return name + ":" + s
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}
