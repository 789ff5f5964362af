package peer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// profile saves a CPU profile of the relay over d (all but its last second)
// and then a heap profile, from its /debug/pprof, into dir. Failures are
// reported on stderr only: a profile is an aid, not a figure.
func profile(ctx context.Context, status, dir string, viewers int, d time.Duration) {
	secs := max(int((d-time.Second)/time.Second), 1)
	get := func(path, file string, timeout time.Duration) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, status+path, nil)
		if err != nil {
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Fprintf(os.Stderr, "profile %s: %v\n", path, err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			fmt.Fprintf(os.Stderr, "profile %s: %s\n", path, resp.Status)
			return
		}
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			fmt.Fprintf(os.Stderr, "profile: %v\n", err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
	}
	n := strconv.Itoa(viewers)
	get("/debug/pprof/profile?seconds="+strconv.Itoa(secs), "relay-cpu-"+n+".pprof", time.Duration(secs+10)*time.Second)
	get("/debug/pprof/heap", "relay-heap-"+n+".pprof", 10*time.Second)
}
