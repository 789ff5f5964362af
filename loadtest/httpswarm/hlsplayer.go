package httpswarm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

var errEnded = errors.New("the stream ended (EXT-X-ENDLIST or a static MPD)")

// backoff spaces retries after errors: 250 ms doubling to 2 s.
type backoff struct{ d time.Duration }

func (b *backoff) wait(ctx context.Context) {
	b.d = min(max(2*b.d, 250*time.Millisecond), 2*time.Second)
	sleep(ctx, b.d)
}

func (b *backoff) reset() { b.d = 0 }

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// runHLS plays an HLS stream: the entry playlist once, then a goroutine per
// track (the video ladder, and the audio rendition when it is separate).
func (c *client) runHLS(ctx context.Context) {
	var bo backoff
	var l *ladder
	var first *hlsMedia
	for ctx.Err() == nil {
		f, err := c.get(ctx, c.cfg.URL, reqPlaylist, true, maxPlaylistBytes)
		if err == nil {
			l, first, err = parseHLS(f.Final, f.Body)
		}
		if err == nil {
			break
		}
		c.fail(ctx, err)
		bo.wait(ctx)
	}
	if l == nil {
		return
	}
	tracks := []*hlsTrack{{c: c, idx: 0, video: true, rungs: l.Video, cur: c.startRung(l.Video, l.first)}}
	if l.Audio != nil {
		tracks = append(tracks, &hlsTrack{c: c, idx: 1, rungs: []variant{*l.Audio}})
	}
	c.setTracks(len(tracks), l.Video[tracks[0].cur].Name)
	// Tracks are placed as far behind the client's start as the playlist
	// lists media after their join point: the live edge is the wall clock.
	c.play.setOrigin(c.start)
	var wg sync.WaitGroup
	for i, t := range tracks {
		var pl *hlsMedia
		if i == 0 {
			pl = first // the entry was a media playlist
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.run(ctx, pl)
		}()
	}
	wg.Wait()
}

// hlsTrack follows one media playlist (switching among rungs for video).
type hlsTrack struct {
	c     *client
	idx   int // the track in the playout model
	video bool
	rungs []variant
	cur   int

	pl       *hlsMedia // the current rung's newest playlist
	useParts bool
	placed   bool
	next     pos
	inSeg    time.Duration // media of the next segment already fetched as parts
	initDone string
}

// blocking reports whether the next reload is a blocking one.
func (t *hlsTrack) blocking() bool {
	return t.c.cfg.LowLatency != LLOff && t.placed && t.pl != nil && t.pl.CanBlock
}

// interval is how long a polling player waits between reloads.
func (t *hlsTrack) interval(changed bool) time.Duration {
	if d := t.c.cfg.Reload; d > 0 {
		return d
	}
	d := time.Second
	if t.pl != nil && t.pl.Target > 0 {
		d = t.pl.Target
	}
	if !changed {
		d /= 2
	}
	return max(d, 100*time.Millisecond)
}

// place joins the stream at the start position of pl; on the client's
// media timeline the track starts as far behind the wall clock as the
// playlist lists media after that position.
func (t *hlsTrack) place(pl *hlsMedia) {
	t.next, t.inSeg = pl.startPos(t.useParts, t.c.cfg.StartSegments), 0
	t.placed = true
	now := time.Now()
	t.c.play.place(t.idx, now.Sub(t.c.start).Seconds()-pl.behind(t.next, t.useParts).Seconds(), now)
}

func (t *hlsTrack) run(ctx context.Context, pl *hlsMedia) {
	c := t.c
	var bo backoff
	var lastLoad time.Time
	changed, fresh := true, pl != nil
	emptyBlocks := 0
	blocked := false
	for ctx.Err() == nil {
		if pl == nil {
			u, kind := t.rungs[t.cur].URI, reqPlaylist
			if t.blocking() && !fresh {
				u, kind = blockingURL(u, t.next, t.pl.PartTarget > 0 && t.useParts), reqBlocking
			} else if !lastLoad.IsZero() && !fresh {
				sleep(ctx, time.Until(lastLoad.Add(t.interval(changed))))
			}
			fresh = false
			lastLoad = time.Now()
			blocked = kind == reqBlocking
			f, err := c.get(ctx, u, kind, true, maxPlaylistBytes)
			var m *hlsMedia
			if err == nil {
				_, m, err = parseHLS(f.Final, f.Body)
				if err == nil && m == nil {
					err = fmt.Errorf("%w: %s is a multivariant playlist, a media playlist was expected", errParse, u)
				}
			}
			if err != nil {
				c.fail(ctx, err)
				bo.wait(ctx)
				continue
			}
			pl = m
		}
		t.pl = pl
		if !t.placed {
			t.useParts = c.cfg.LowLatency != LLOff && pl.PartTarget > 0
			t.place(pl)
		}
		changed = false
		switched := false
		for ctx.Err() == nil {
			it, ok, behind := pl.lookup(t.next, t.useParts, t.inSeg)
			if behind {
				c.resync()
				t.place(pl)
				continue
			}
			if !ok {
				if n := pl.normalize(t.next); n != t.next {
					t.next, t.inSeg = n, 0
					continue
				}
				break
			}
			if t.video && t.next.Part == 0 && t.inSeg == 0 {
				if n := c.chooseRung(t.cur, t.rungs); n != t.cur {
					t.cur, switched = n, true
					break
				}
			}
			if pl.Map != "" && pl.Map != t.initDone {
				if _, err := c.get(ctx, pl.Map, reqInit, false, c.cfg.MaxMediaBytes); err != nil {
					c.fail(ctx, err)
					bo.wait(ctx)
					break
				}
				t.initDone = pl.Map
			}
			kind := reqSegment
			if it.IsPart {
				kind = reqPart
			}
			f, err := c.get(ctx, it.URI, kind, false, c.cfg.MaxMediaBytes)
			if err != nil {
				c.fail(ctx, err)
				bo.wait(ctx)
				break
			}
			bo.reset()
			c.media(t.idx, t.rungs[t.cur].Name, it.Dur.Seconds(), f.Bytes, c.timing(f))
			if it.Next.MSN != t.next.MSN {
				t.inSeg = 0
			} else {
				t.inSeg += it.Dur
			}
			t.next = it.Next
			changed = true
		}
		if switched {
			pl, fresh = nil, true
			continue
		}
		if pl.Endlist && !changed {
			c.fail(ctx, errEnded)
			return
		}
		if blocked && !changed && time.Since(lastLoad) < 50*time.Millisecond {
			// A blocking reload answered at once with nothing new: do not
			// spin on a server that does not hold them.
			emptyBlocks++
			sleep(ctx, time.Duration(min(emptyBlocks, 5))*100*time.Millisecond)
		} else {
			emptyBlocks = 0
		}
		pl = nil
	}
}
