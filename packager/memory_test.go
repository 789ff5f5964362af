package packager

import (
	"runtime"
	"testing"

	"github.com/relaymesh/relaymesh/internal/av"
)

// BenchmarkMemoryPerStream reports the heap one packaged stream holds in
// steady state with the default window (7 segments listed, 10 kept, parts
// on): a 2.5 Mbit/s-like H.264 stream (25 fps, 2 s GOP, 40 KB keyframes,
// 12 KB inter frames) plus AAC, 60 s of it pushed through all renditions.
//
//	go test -run '^$' -bench MemoryPerStream ./packager/
func BenchmarkMemoryPerStream(b *testing.B) {
	var frames []*av.Frame
	frames = append(frames, video(0, testAVCSeq), audio(0, testAACSeq))
	aNext := 0.0
	for g := 0; g < 30; g++ {
		for i := 0; i < 50; i++ {
			ts := uint32(g*2000 + i*40)
			for aNext <= float64(ts) {
				frames = append(frames, audio(uint32(aNext), aacFrame(350)))
				aNext += 1024 * 1000 / 44100.0
			}
			if i == 0 {
				frames = append(frames, video(ts, keyframe(40000)))
			} else {
				frames = append(frames, video(ts, interframe(12000)))
			}
		}
	}
	var held float64
	for n := 0; n < b.N; n++ {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		s := testSegmenter(true, false)
		for _, f := range frames {
			s.push(f)
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		held = float64(after.HeapAlloc) - float64(before.HeapAlloc)
		runtime.KeepAlive(s)
	}
	b.ReportMetric(held/(1<<20), "MiB/stream")
}
