package httpswarm

import (
	"context"
	"math"
	"sync"
	"time"
)

// mpdHolder is a client's newest manifest, shared by its tracks.
type mpdHolder struct {
	mu sync.Mutex
	m  *dashModel
	ch chan struct{} // closed when m is replaced
}

func (h *mpdHolder) set(m *dashModel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m = m
	close(h.ch)
	h.ch = make(chan struct{})
}

func (h *mpdHolder) get() (*dashModel, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m, h.ch
}

func (c *client) loadMPD(ctx context.Context) (*dashModel, error) {
	f, err := c.get(ctx, c.cfg.URL, reqPlaylist, true, maxPlaylistBytes)
	if err != nil {
		return nil, err
	}
	return parseMPD(f.Final, f.Body, time.Now())
}

// runDASH plays a DASH stream: the manifest reloaded by one goroutine, and a
// goroutine per track (video, and audio when there is an audio set).
func (c *client) runDASH(ctx context.Context) {
	var bo backoff
	var m *dashModel
	for ctx.Err() == nil {
		var err error
		if m, err = c.loadMPD(ctx); err == nil {
			break
		}
		c.fail(ctx, err)
		bo.wait(ctx)
	}
	if m == nil {
		return
	}
	h := &mpdHolder{m: m, ch: make(chan struct{})}
	tracks := []*dashTrack{{c: c, idx: 0, video: true, h: h}}
	if len(m.Audio) > 0 {
		tracks = append(tracks, &dashTrack{c: c, idx: 1, h: h})
	}
	vs := make([]variant, len(m.Video))
	first := 0
	for i, r := range m.Video {
		vs[i] = r.variant
		if r.Name == m.First {
			first = i
		}
	}
	tracks[0].cur = c.startRung(vs, first)
	tracks[0].curName = vs[tracks[0].cur].Name
	c.setTracks(len(tracks), tracks[0].curName)
	if m.Dynamic && !m.AST.IsZero() {
		// Presentation time 0 is at availabilityStartTime.
		c.play.setOrigin(m.AST)
	}
	var wg sync.WaitGroup
	if m.Dynamic {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var bo backoff
			last := time.Now()
			for ctx.Err() == nil {
				cur, _ := h.get()
				d := c.cfg.Reload
				if d <= 0 {
					d = 2 * time.Second
					if cur.UpdatePeriod > 0 {
						d = min(max(cur.UpdatePeriod, 500*time.Millisecond), 10*time.Second)
					}
				}
				sleep(ctx, time.Until(last.Add(d)))
				last = time.Now()
				nm, err := c.loadMPD(ctx)
				if err != nil {
					c.fail(ctx, err)
					bo.wait(ctx)
					continue
				}
				bo.reset()
				h.set(nm)
				if !nm.Dynamic {
					return
				}
			}
		}()
	}
	for _, t := range tracks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.run(ctx)
		}()
	}
	wg.Wait()
}

// dashTrack plays one adaptation set.
type dashTrack struct {
	c       *client
	idx     int
	video   bool
	h       *mpdHolder
	cur     int
	curName string

	placed    bool
	lastStart float64 // presentation time of the last segment fetched
	lastEnd   float64
	initDone  string
}

// nextSeg returns the first segment after the last one fetched; behind
// when segments between them have left the manifest.
func (t *dashTrack) nextSeg(segs []dashSeg) (dashSeg, bool, bool) {
	if len(segs) == 0 {
		return dashSeg{}, false, false
	}
	if segs[0].Start > t.lastEnd+0.1 {
		return dashSeg{}, false, true
	}
	for _, s := range segs {
		if s.Start > t.lastStart+1e-3 {
			return s, true, false
		}
	}
	return dashSeg{}, false, false
}

func (t *dashTrack) place(m *dashModel, segs []dashSeg) {
	k := t.c.cfg.StartSegments
	if m.Delay > 0 && len(segs) > 0 && segs[len(segs)-1].Dur > 0 {
		k = int(math.Ceil(m.Delay.Seconds() / segs[len(segs)-1].Dur))
	}
	k = min(max(k, 1), len(segs))
	s := segs[len(segs)-k]
	t.lastStart, t.lastEnd = s.Start-1, s.Start
	t.placed = true
	t.c.play.place(t.idx, s.Start, time.Now())
}

func (t *dashTrack) run(ctx context.Context) {
	c := t.c
	var bo backoff
	for ctx.Err() == nil {
		m, changed := t.h.get()
		reps := m.Video
		if !t.video {
			reps = m.Audio
		}
		if len(reps) == 0 {
			select {
			case <-ctx.Done():
			case <-changed:
			}
			continue
		}
		// The rung by name: the manifest may have changed.
		t.cur = 0
		for i, r := range reps {
			if r.Name == t.curName {
				t.cur = i
			}
		}
		if !t.placed {
			if len(reps[t.cur].Segs) == 0 {
				select {
				case <-ctx.Done():
				case <-changed:
				}
				continue
			}
			t.place(m, reps[t.cur].Segs)
		}
		progressed := false
		for ctx.Err() == nil {
			seg, ok, behind := t.nextSeg(reps[t.cur].Segs)
			if behind {
				c.resync()
				t.place(m, reps[t.cur].Segs)
				continue
			}
			if !ok {
				break
			}
			if t.video {
				vs := make([]variant, len(reps))
				for i, r := range reps {
					vs[i] = r.variant
				}
				if n := c.chooseRung(t.cur, vs); n != t.cur {
					t.cur, t.curName = n, reps[n].Name
					continue
				}
			}
			if seg.Init != "" && seg.Init != t.initDone {
				if _, err := c.get(ctx, seg.Init, reqInit, false, c.cfg.MaxMediaBytes); err != nil {
					c.fail(ctx, err)
					bo.wait(ctx)
					break
				}
				t.initDone = seg.Init
			}
			f, err := c.get(ctx, seg.URL, reqSegment, false, c.cfg.MaxMediaBytes)
			if err != nil {
				c.fail(ctx, err)
				bo.wait(ctx)
				break
			}
			bo.reset()
			c.media(t.idx, reps[t.cur].Name, seg.Dur, f.Bytes, c.timing(f))
			t.lastStart, t.lastEnd = seg.Start, seg.Start+seg.Dur
			progressed = true
		}
		if !m.Dynamic && !progressed {
			c.fail(ctx, errEnded)
			return
		}
		select {
		case <-ctx.Done():
		case <-changed:
		}
	}
}
