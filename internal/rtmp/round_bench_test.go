package rtmp

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/relaymesh/relaymesh/internal/av"
)

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// BenchmarkRound is one worker's round over n viewers of a 2.65 Mbit/s
// stream on loopback TCP: per viewer, the frames of 100 ms (three pictures
// and five audio frames, ~33 KB, shared by every viewer) polled, chunked and
// written with one non-blocking writev, and the kernel's queue asked every
// fourth round, as in a relay at that audience. One op is one round; the
// ns/viewer metric is what the server spends per viewer and round (the
// readers, one goroutine per viewer that discards what it reads, run on
// the other core and are not in it, but in the machine's load). It
// allocates nothing.
func BenchmarkRound(b *testing.B) {
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprintf("viewers=%d", n), func(b *testing.B) {
			benchRound(b, n)
		})
	}
}

func benchRound(b *testing.B, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A worker whose rounds the benchmark runs itself (no goroutine of its own).
	f := &Flusher{interval: 100 * time.Millisecond, cfg: FlusherConfig{Workers: 1}.withDefaults(), ctx: ctx}
	w := &flushWorker{f: f, wake: make(chan struct{}, 1)}
	f.workers = []*flushWorker{w}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	srcs := make([]*memSource, n)
	conns := make([]*Conn, n)
	for i := range n {
		accepted := make(chan *Conn, 1)
		go func() {
			nc, err := ln.Accept()
			if err != nil {
				accepted <- nil
				return
			}
			c, err := Accept(nc, ConnConfig{Flusher: f}, nil)
			if err != nil {
				accepted <- nil
				return
			}
			accepted <- c
		}()
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Client(nc, ConnConfig{}, nil); err != nil {
			b.Fatal(err)
		}
		c := <-accepted
		if c == nil || c.worker != w {
			b.Fatal("server connection not on the benchmark's worker")
		}
		go func() { _, _ = io.Copy(io.Discard, nc) }()
		c.writer.SetChunkSize(DefaultChunkSize) // as announced by a session (nobody parses here)
		srcs[i] = &memSource{}
		c.Bind(1, srcs[i], nil, nil)
		conns[i] = c
		defer nc.Close()
		defer c.Close(nil)
	}
	sizes := []int{20000, 375, 5500, 375, 375, 5500, 375, 375} // 32,875 bytes: 100 ms of 2.63 Mbit/s
	frames := make([]*av.Frame, len(sizes))
	for i, s := range sizes {
		frames[i] = &av.Frame{Kind: av.KindVideo, Payload: make([]byte, s)}
		if s < 1000 {
			frames[i].Kind = av.KindAudio
		}
	}
	now := time.Now()
	feed := func(round int) {
		for i, f := range frames {
			f.Timestamp = uint32(round*100 + i*12)
		}
		for j, s := range srcs {
			s.mu.Lock()
			s.frames = append(s.frames[:0], frames...)
			s.mu.Unlock()
			conns[j].MediaReady()
		}
	}
	for r := range 8 { // attach, handshake leftovers, warm the sockets up
		feed(r)
		now = now.Add(100 * time.Millisecond)
		w.round(now, true)
	}
	// The round's own CPU time (its thread's clock: the machine's other
	// load, which stretches the wall time, is not in it).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for r := 8; b.Loop(); r++ {
		b.StopTimer()
		feed(r)
		// Let the readers empty the sockets: a round measures writes
		// into sockets with room, as for viewers that keep up.
		time.Sleep(2 * time.Millisecond)
		now = now.Add(100 * time.Millisecond)
		b.StartTimer()
		t0 := threadCPU()
		w.round(now, false)
		cpu += threadCPU() - t0
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/viewer")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/viewer")
	for _, c := range conns {
		if c.retry {
			b.Fatal("a socket was full: the readers did not keep up")
		}
	}
}
