package packager

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
	"github.com/prometheus/client_golang/prometheus"
)

// lingerPackager is a packager over a push source with a clock the test
// moves (off is added to the wall clock), served by direct calls of its
// handler, so that a test's hooks run in the test's goroutine.
func lingerPackager(t *testing.T, src Source) (p *Packager, off *atomic.Int64, serve func(path string) *httptest.ResponseRecorder) {
	t.Helper()
	// A linger far longer than the test: its timer never fires by
	// itself; the test calls lingerCheck as that timer would.
	p, err := New(src, Config{Linger: time.Hour, DASHStartAtOnce: true, Logger: discardLogger(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	off = new(atomic.Int64)
	p.now = func() time.Time { return time.Now().Add(time.Duration(off.Load())) }
	serve = func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		p.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	return p, off, serve
}

func current(p *Packager, key string) *stream {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.streams[key]
}

// A request that looks an idle stream up just as its linger fires is
// counted by the linger: the stream goes on and the request is answered.
// Before, the linger could read the stream's last request from before the
// lookup and stop the stream under the request, which was answered from
// the stopped run or got a 503.
func TestLingerSeesARequestItRacesWith(t *testing.T) {
	src := newPushSource()
	p, off, serve := lingerPackager(t, src)
	if err := p.Start(context.Background(), "live", "test"); err != nil {
		t.Fatal(err)
	}
	src.current(t).push(synthGOPs(0, 4, true)...)
	waitUntil(t, "the first segments", func() bool { return serve("/hls/live/test/full.m3u8").Code == http.StatusOK })
	st := current(p, "live/test")

	off.Add(int64(2 * time.Hour)) // nobody asked for it for longer than the linger
	fired := 0
	p.lookedUp = func(s *stream) { // the linger's timer fires right after the lookup
		fired++
		s.lingerCheck()
	}
	if rec := serve("/hls/live/test/full.m3u8"); rec.Code != http.StatusOK {
		t.Fatalf("a request as the linger fired: %d %s", rec.Code, rec.Body)
	}
	p.lookedUp = nil
	if fired != 1 || current(p, "live/test") != st || st.ctx.Err() != nil {
		t.Fatalf("after a request as the linger fired (%d): the stream was stopped", fired)
	}

	// With no request, the same check stops it.
	off.Add(int64(2 * time.Hour))
	if _, again := st.lingerCheck(); again {
		t.Fatal("an idle stream's linger looks again instead of stopping it")
	}
	waitUntil(t, "the idle stream to be forgotten", func() bool { return current(p, "live/test") == nil })
}

// A request for a stream its linger is stopping waits for it to be gone
// and gets the next run, which goes on with the stopped run's timeline.
// Before, the request was handed the stopping run: it got that run's last
// playlist or a 503, and no next run started.
func TestRequestDuringTheLingersStopGetsTheNextRun(t *testing.T) {
	src := newPushSource()
	p, off, serve := lingerPackager(t, src)
	if err := p.Start(context.Background(), "live", "test"); err != nil {
		t.Fatal(err)
	}
	src.current(t).push(synthGOPs(0, 4, true)...)
	waitUntil(t, "the first run's segments", func() bool {
		rec := serve("/hls/live/test/full.m3u8")
		var pl playlist.Media
		return rec.Code == http.StatusOK && pl.Unmarshal(rec.Body.Bytes()) == nil && len(pl.Segments) >= 3
	})
	old := current(p, "live/test")

	off.Add(int64(2 * time.Hour))
	// The linger decides to stop the stream; holding its lock keeps the
	// stop from going further (from keeping its resume point and
	// forgetting it) for now.
	old.mu.Lock()
	go old.lingerCheck()
	waitUntil(t, "the linger to stop the stream", func() bool { return old.ctx.Err() != nil })

	got := make(chan *httptest.ResponseRecorder, 1)
	go func() { got <- serve("/hls/live/test/full.m3u8") }()
	select {
	case rec := <-got:
		t.Fatalf("a request for a stopping stream was answered by it: %d\n%s", rec.Code, rec.Body)
	case <-time.After(100 * time.Millisecond):
	}
	src.mu.Lock()
	before := src.subs
	src.mu.Unlock()
	old.mu.Unlock() // the old run goes; the request starts the next
	waitUntil(t, "the next run's subscription", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.subs > before
	})
	src.current(t).push(synthGOPs(60000, 4, true)...)
	rec := <-got
	var pl playlist.Media
	if err := pl.Unmarshal(rec.Body.Bytes()); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("the next run: %d %v\n%s", rec.Code, err, rec.Body)
	}
	if pl.MediaSequence != 4 || pl.DiscontinuitySequence == nil || *pl.DiscontinuitySequence != 1 {
		t.Fatalf("the next run does not go on with the stopped run's timeline:\n%s", rec.Body)
	}
	if current(p, "live/test") == old {
		t.Fatal("the stopped run is still the packager's")
	}
}
