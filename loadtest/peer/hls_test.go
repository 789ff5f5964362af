package peer

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// requireTools skips when nginx-rtmp or ffmpeg is missing on a developer's
// machine, and fails in CI.
func requireTools(t *testing.T) {
	t.Helper()
	missing := ""
	for _, name := range []string{"nginx", "ffmpeg", "go"} {
		if _, err := exec.LookPath(name); err != nil {
			missing = name
		}
	}
	if _, err := os.Stat("/usr/lib/nginx/modules/ngx_rtmp_module.so"); err != nil && missing == "" {
		missing = "libnginx-mod-rtmp"
	}
	if missing == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required in CI but not installed", missing)
	}
	t.Skipf("%s not installed: skipping (apt-get install nginx libnginx-mod-rtmp ffmpeg)", missing)
}

// TestRunHLS runs the HLS comparison briefly: both servers serve every
// client, and the report has every figure. (No performance assertion: the
// figures come from `make bench-peer-hls`.)
func TestRunHLS(t *testing.T) {
	requireTools(t)
	bin := filepath.Join(t.TempDir(), "relaymesh")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/relaymesh/relaymesh/cmd/relaymesh").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := RunHLS(ctx, Config{Bin: bin, Viewers: []int{1, 2}, Duration: 4 * time.Second, Warmup: 4 * time.Second, BitrateKbps: 800})
	if err != nil {
		t.Fatal(err)
	}
	// A ratio is left out where nginx-rtmp's CPU time in the short window
	// rounds to 0 (/proc counts in 10 ms steps).
	// Three entries (index, muxed, the floor), each beside nginx-rtmp, at
	// two sizes.
	if len(r.Results) != 12 || len(r.Ratios) > 6 || len(r.Servers) != 6 {
		t.Fatalf("%+v", r)
	}
	for _, x := range r.Results {
		if x.Playing != x.Viewers || x.Requests["segment"] == 0 || x.Requests["playlist"] == 0 || len(x.Errors) != 0 {
			t.Errorf("%s at %d viewers: %d playing, requests %v, errors %v", x.Server, x.Viewers, x.Playing, x.Requests, x.Errors)
		}
		// CPU time in a 4 s window can be below /proc's 10 ms resolution;
		// the memory shows the processes were measured.
		if x.RSSMiB <= 0 {
			t.Errorf("%s at %d viewers: the server's processes were not measured", x.Server, x.Viewers)
		}
	}
}
