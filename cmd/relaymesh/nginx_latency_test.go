package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// nginxRTMPModule is Debian's nginx-rtmp module.
const nginxRTMPModule = "/usr/lib/nginx/modules/ngx_rtmp_module.so"

// requireNginx returns nginx's path; it skips without nginx and its RTMP
// module, and fails so when CI=true.
func requireNginx(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err == nil {
		_, err = os.Stat(nginxRTMPModule)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("nginx with its RTMP module is required when CI=true (apt-get install nginx libnginx-mod-rtmp): %v", err)
		}
		t.Skipf("nginx with its RTMP module not installed (apt-get install nginx libnginx-mod-rtmp): %v", err)
	}
	return bin
}

// nginxLatencyConf is an nginx-rtmp edge pulling live/cam from upstream
// (r1: two hops from the primary, as r2 is) with hls on and dash on,
// fragments of one GOP (1 s), the files served with CORS headers (the
// players' page has an origin of its own).
func nginxLatencyConf(dir, rtmpListen, httpListen, upstream string) string {
	return fmt.Sprintf(`load_module %[1]s;
daemon off;
master_process on;
worker_processes 1;
error_log %[2]s/nginx-error.log warn;
pid %[2]s/nginx.pid;
events { worker_connections 1024; }
rtmp {
    server {
        listen %[3]s;
        application live {
            live on;
            pull rtmp://%[5]s/live/cam name=cam static;
            hls on;
            hls_path %[2]s/hls;
            hls_fragment 1s;
            hls_playlist_length 7s;
            dash on;
            dash_path %[2]s/dash;
            dash_fragment 1s;
            dash_playlist_length 7s;
        }
    }
}
http {
    access_log off;
    client_body_temp_path %[2]s/client_body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    types {
        application/vnd.apple.mpegurl m3u8;
        video/mp2t ts;
        application/dash+xml mpd;
        video/mp4 mp4 m4v;
        audio/mp4 m4a;
    }
    server {
        listen %[4]s;
        add_header Access-Control-Allow-Origin * always;
        add_header Cache-Control no-cache always;
        location /hls/ { alias %[2]s/hls/; }
        location /dash/ { alias %[2]s/dash/; }
    }
}
`, nginxRTMPModule, dir, rtmpListen, httpListen, upstream)
}

// TestNginxLatency: the players of TestPlayerLatency, default settings, on
// an nginx-rtmp edge with hls on and dash on that pulls the same stream
// from r1 (two hops from the primary, as relaymesh's r2), same publisher,
// same measure (how far behind the live edge the player plays over the
// second half of 20 s). It runs with the latency tests:
//
//	RELAYMESH_LATENCY=1 go test -run 'TestPlayerLatency|TestNginxLatency' -v ./cmd/relaymesh/
func TestNginxLatency(t *testing.T) {
	m, _, _ := latencySetup(t, 3) // two players, and up to 34 s of waiting for nginx's files
	bin := requireNginx(t)
	root := repoRoot(t)
	requireBrowser(t, root)
	chromium, _ := exec.LookPath("chromium")
	// nginx's workers (not root) write the fragments and read them: a
	// directory of its own they can reach (t.TempDir's parent is private).
	dir, err := os.MkdirTemp("", "relaymesh-nginx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"hls", "dash"} {
		p := filepath.Join(dir, sub)
		if err := os.Mkdir(p, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	rtmpAddr, httpAddr := freeAddr(t), freeAddr(t)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxLatencyConf(dir, rtmpAddr, httpAddr, m.r1.rtmp)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", conf)
	// A process group of its own: killing the master alone leaves its
	// workers running, holding the test's files (and any lock the test
	// was started under) open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGTERM: the master stops its workers and exits; then the group
		// is killed, whatever is left of it.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _, _ = cmd.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		if b, _ := os.ReadFile(filepath.Join(dir, "nginx-error.log")); len(b) > 0 {
			t.Logf("nginx-error.log:\n%s", b)
		}
	})
	base := "http://" + httpAddr
	for _, f := range []string{"/hls/cam.m3u8", "/dash/cam.mpd"} {
		waitOK(t, "nginx's "+f, base+f, 30*time.Second)
	}
	time.Sleep(4 * time.Second)
	for _, tc := range []struct{ player, url string }{
		{"hls", base + "/hls/cam.m3u8"},
		{"dash", base + "/dash/cam.mpd"},
	} {
		r := playerLatency(t, root, chromium, tc.player, tc.url, 0)
		t.Logf("%s (default settings) on nginx-rtmp pulling from r1: %.2f s behind the live edge (p50), %.2f s at most; longest stall %d ms; on %.0f kbit/s",
			tc.player, r.p50, r.max, r.maxStallMs, r.kbps)
	}
}
