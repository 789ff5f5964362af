package packager

import (
	"bufio"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/relaymesh/relaymesh/internal/hub"
)

// The packager serves HLS and DASH of the streams of a hub registry. It
// subscribes to a stream's hub (losslessly) on the first request, or when
// told the stream was published (Start); the multivariant playlist lists the
// renditions it makes by dropping frames.
func Example() {
	reg := hub.NewRegistry(hub.Config{}, discardLogger())
	p, err := New(HubSource{Registry: reg}, Config{Logger: discardLogger()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	h := reg.Acquire("live", "cam") // the broadcaster's side
	defer h.Release()
	h.Begin(hub.PublisherInfo{Addr: "192.0.2.1:50000", ID: "c1"})
	if err := p.Start(context.Background(), "live", "cam"); err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range synthGOPs(0, 3, true) { // 6 s of H.264 and AAC
		h.Write(f.Kind, f.Timestamp, f.Payload)
	}
	rec := httptest.NewRecorder()
	p.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/hls/live/cam/index.m3u8", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	sc := bufio.NewScanner(strings.NewReader(rec.Body.String()))
	for sc.Scan() {
		if line := sc.Text(); strings.HasSuffix(line, ".m3u8") {
			fmt.Println(line) // the renditions' media playlists
		}
	}
	// Output:
	// 200 application/vnd.apple.mpegurl
	// full.m3u8
	// lite.m3u8
	// key.m3u8
	// audio.m3u8
}
