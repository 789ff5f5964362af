package httpserver

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Revision is the VCS revision when the binary was built without VCS data
// (a container build without .git): go build -ldflags "-X …/httpserver.Revision=abc123".
var Revision = "unknown"

// buildInfo is relaymesh_build_info: 1, labelled with the module version,
// the Go version and the VCS revision the binary was built from.
func buildInfo() prometheus.Collector {
	version, revision, modified := "unknown", Revision, "false"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "relaymesh_build_info",
		Help: "Always 1; the labels say which build of relaymesh runs.",
		ConstLabels: prometheus.Labels{
			"version": version, "goversion": runtime.Version(), "revision": revision, "modified": modified,
		},
	})
	g.Set(1)
	return g
}

func newDurations() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "relaymesh_http_request_duration_seconds",
		Help: "Time to answer an HTTP request, by route (the mux pattern), method and status code. " +
			"Long polls (LL-HLS blocking reloads, the dashboard's event stream) count their wait.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"route", "method", "code"})
}

// instrument measures every request served by mux. The route label is the
// pattern that matched (bounded by the routes mounted), never the path.
func instrument(next http.Handler, h *prometheus.HistogramVec) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		route := r.Pattern // set by the mux on the request it served (middleware in front passes r on)
		if route == "" {
			route = "unmatched"
		}
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		h.WithLabelValues(route, method(r.Method), strconv.Itoa(code)).Observe(time.Since(start).Seconds())
	})
}

func method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions, http.MethodPatch:
		return m
	}
	return "other"
}

// statusWriter remembers the status code; Unwrap keeps
// http.ResponseController (flushes, deadlines) working through it.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
