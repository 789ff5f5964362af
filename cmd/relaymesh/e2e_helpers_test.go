package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// requireTool skips when a real client is missing on a developer's machine,
// and fails in CI, where .ci/run installs it.
func requireTool(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required in CI but not installed", name)
			}
			t.Skipf("%s not installed: skipping (apt-get install %s)", name, name)
		}
	}
}

// freeAddr returns a loopback address with a port free at the moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// node is a primary or relay run in-process through its subcommand.
type testNode struct {
	rtmp, http string
	cancel     context.CancelFunc
	done       chan struct{} // closed when the node returned, with err
	err        error
}

func (n *testNode) stop(t *testing.T) {
	t.Helper()
	n.cancel()
	select {
	case <-n.done:
		if n.err != nil {
			t.Errorf("node %s: %v", n.rtmp, n.err)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("node %s did not stop within 15s", n.rtmp)
	}
}

// startNode runs a subcommand (primary or relay) with its --rtmp and --http
// addresses chosen here, and waits until it accepts connections on both.
// A port freeAddr found free can be taken before the node listens on it
// (any connection on the machine may get it as its local port, more so
// with tests running side by side): then the node starts again on fresh
// ports.
func startNode(t *testing.T, run func(context.Context, []string) error, rtmpAddr string, args ...string) *testNode {
	t.Helper()
	for try := 1; ; try++ {
		n, err := tryStartNode(t, run, rtmpAddr, args)
		if err == nil {
			return n
		}
		if !errors.Is(err, syscall.EADDRINUSE) || try == 3 {
			t.Fatal(err)
		}
		t.Logf("%v: again on other ports", err)
	}
}

func tryStartNode(t *testing.T, run func(context.Context, []string) error, rtmpAddr string, args []string) (*testNode, error) {
	t.Helper()
	if rtmpAddr == "" {
		rtmpAddr = freeAddr(t)
	}
	n := &testNode{rtmp: rtmpAddr, http: freeAddr(t), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	level := os.Getenv("RELAYMESH_TEST_LOG") // e.g. debug, to see the servers' logs
	if level == "" {
		level = "warn"
	}
	args = append([]string{"--rtmp", n.rtmp, "--http", n.http, "--log-level", level}, args...)
	go func() { n.err = run(ctx, args); close(n.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for _, addr := range []string{n.rtmp, n.http} {
		for {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-n.done:
				cancel()
				return nil, fmt.Errorf("node exited: %w", n.err)
			default:
			}
			if time.Now().After(deadline) {
				cancel()
				select {
				case <-n.done:
				case <-time.After(15 * time.Second):
				}
				return nil, fmt.Errorf("node %s not listening on %s", n.rtmp, addr)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Both answered: the node's, unless it failed to open its second
	// listener while the first one took the dial.
	select {
	case <-n.done:
		cancel()
		return nil, fmt.Errorf("node exited: %w", n.err)
	default:
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-n.done:
		case <-time.After(15 * time.Second):
		}
	})
	return n, nil
}

// publisher is a real ffmpeg pushing an H.264/AAC test pattern.
type publisher struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
}

// startPublisher pushes testsrc2 + sine to url in real time for d, with a
// 2-second GOP at kbps kbit/s and no B-frames.
func startPublisher(t *testing.T, url string, d time.Duration, kbps int) *publisher {
	t.Helper()
	return startPublisherGOP(t, url, d, kbps, 50)
}

// startPublisherGOP is startPublisher with a keyframe every gop frames
// (25 frames a second).
func startPublisherGOP(t *testing.T, url string, d time.Duration, kbps, gop int) *publisher {
	t.Helper()
	return startPublisherAt(t, url, d, kbps, gop, time.Time{})
}

// startPublisherAt is startPublisherGOP with the media clock tied to the
// wall clock when epoch is set: the frame captured (generated, in real
// time) at wall time w carries the timestamp w − epoch, as a camera
// stamping its frames would. ffmpeg adds the wall time at which its filters
// start (RTCSTART, the first frame) less epoch to every timestamp, so its
// own start-up is not counted as delay, as it is when a frame's time is
// taken as ffmpeg's launch plus its timestamp.
func startPublisherAt(t *testing.T, url string, d time.Duration, kbps, gop int, epoch time.Time) *publisher {
	t.Helper()
	k := strconv.Itoa(kbps) + "k"
	args := []string{"-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"}
	if !epoch.IsZero() {
		off := fmt.Sprintf("PTS+(RTCSTART-%d)/(TB*1000000)", epoch.UnixMicro())
		args = append(args, "-vf", "setpts="+off, "-af", "asetpts="+off)
	}
	args = append(args,
		"-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-pix_fmt", "yuv420p",
		"-g", strconv.Itoa(gop), "-b:v", k, "-maxrate", k, "-bufsize", k,
		"-c:a", "aac", "-b:a", "64k",
		"-t", strconv.Itoa(int(d.Seconds())), "-f", "flv", url)
	cmd := exec.Command("ffmpeg", args...)
	p := &publisher{cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: this one after the kill, so a failed test
	// shows what ffmpeg said and how it ended (a publish that never went
	// live is ffmpeg's refusal, a dead node or a slow start).
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("publisher ffmpeg to %s: %v; its stderr: %q", url, p.cmd.ProcessState, p.stderr.String())
		}
	})
	t.Cleanup(p.kill)
	return p
}

func (p *publisher) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_, _ = p.cmd.Process.Wait()
	}
}
