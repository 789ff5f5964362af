package packager

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// TestFirstLoadWaitsForNextPart: a low-latency media playlist asked for
// without _HLS_msn, when its newest part is more than a quarter part old,
// is answered as the next part is cut, and lists it; with no part coming
// it is answered anyway, after at most 1.5 part targets, with what there
// is. (A player starts PART-HOLD-BACK behind the edge of its first
// playlist: an old edge would put it further behind for good.)
func TestFirstLoadWaitsForNextPart(t *testing.T) {
	p, src, srv := testServer(t, Config{MaxWait: 20 * time.Second})
	sid, sub := startStream(t, src, srv.URL)
	time.Sleep(2 * p.cfg.PartTarget) // the newest part (of segment 0) is old now

	got := make(chan string, 1)
	go func() {
		// A player of its own (startStream's requests came from this
		// address too, and a client that polled is answered at once).
		resp, err := http.Get(srv.URL + "/hls/live/test/full.m3u8?session=player")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- string(b)
	}()
	waitUntil(t, "the first load to wait", func() bool { return value(t, p.m.waiting) == 1 })
	// Frames up to the one that closes part 0 of segment 1 (200 ms).
	gop := synthGOPs(2000, 1, false)[1:] // after the keyframe already sent
	k := 0
	for gop[k].Kind != av.KindVideo || gop[k].Timestamp < 2200 {
		k++
	}
	sub.push(gop[:k+1]...)
	if body := <-got; !strings.Contains(body, `URI="`+sid+"_full_1.0.m4s\",INDEPENDENT=YES") {
		t.Fatalf("the first load was not answered with the new part:\n%s", body)
	}

	// No part coming: answered with what there is.
	time.Sleep(2 * p.cfg.PartTarget)
	resp, body := get(t, http.DefaultClient, srv.URL+"/hls/live/test/audio.m3u8?session=player")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), sid+"_audio_1.0.m4s") {
		t.Fatalf("audio.m3u8 with no part coming: %d\n%s", resp.StatusCode, body)
	}
	if n := value(t, p.m.waiting); n != 0 {
		t.Fatalf("%v requests still waiting", n)
	}
}

// firstLoad: a client's request without _HLS_msn is a first load unless
// the same client asked for the same playlist so within firstLoadWindow (a
// poller, answered at once); a full table makes every request a poll.
func TestFirstLoadOncePerClient(t *testing.T) {
	st := &stream{}
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		client string
		r      Rendition
		at     time.Duration
		want   bool
	}{
		{"addr:10.0.0.1", Full, 0, true},
		{"addr:10.0.0.1", Full, time.Second, false}, // polling
		{"addr:10.0.0.1", Audio, time.Second, true}, // another playlist
		{"addr:10.0.0.2", Full, time.Second, true},  // another client
		{"addr:10.0.0.1", Full, 2 * time.Second, false},
		{"addr:10.0.0.1", Full, 2*time.Second + firstLoadWindow + time.Millisecond, true}, // back after a while
	} {
		if got := st.firstLoad(c.client, c.r, t0.Add(c.at)); got != c.want {
			t.Errorf("%s %v at %v: first load %v, want %v", c.client, c.r, c.at, got, c.want)
		}
	}
	full := &stream{}
	for i := range maxFirstLoads {
		full.firstLoad("session:"+strconv.Itoa(i), Full, t0)
	}
	if full.firstLoad("session:new", Full, t0.Add(time.Second)) {
		t.Error("a new client counted as a first load with the table full")
	}
	if !full.firstLoad("session:new", Full, t0.Add(firstLoadWindow+time.Second)) || len(full.polls) != 1 {
		t.Errorf("the table was not pruned: %d clients", len(full.polls))
	}
}
