package httpswarm

import (
	"sync"
	"time"
)

// playout is a player's buffer model on one media timeline (seconds) that
// all its tracks share. Each track is placed where it joins the stream and
// extends its buffered end with every download. Playback starts at the
// latest of the tracks' join points once every track has media beyond it;
// the playhead then moves with the wall clock, and whenever it reaches the
// end of what was downloaded (the least of the tracks) the player stalls
// until more arrives. Stalls are found lazily, at the next download or at
// the end, from when the buffer ran dry.
type playout struct {
	mu      sync.Mutex
	placed  []bool
	begin   []float64 // where each track joined
	end     []float64 // each track's buffered end
	started bool
	startAt time.Time

	playing    bool
	resumeWall time.Time // when playback last (re)started
	resumeAt   float64   // playhead then
	played     float64   // playhead when stalled
	stallFrom  time.Time // when the current stall began

	stalls    int
	stallTime time.Duration
	maxStall  time.Duration

	// origin is the wall time of media time 0, when known: the playhead's
	// lag behind the live edge is then the wall time since origin minus
	// the playhead.
	origin time.Time
}

// setOrigin sets the wall time of media time 0.
func (p *playout) setOrigin(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.origin = t
}

// lag is how far the playhead is behind the live edge at now, in seconds
// (ok false before playback or without an origin).
func (p *playout) lag(now time.Time) (float64, bool) {
	if !p.started || p.origin.IsZero() {
		return 0, false
	}
	return now.Sub(p.origin).Seconds() - p.pos(now), true
}

func newPlayout(tracks int) *playout {
	return &playout{placed: make([]bool, tracks), begin: make([]float64, tracks), end: make([]float64, tracks)}
}

func (p *playout) buffered() float64 {
	b := p.end[0]
	for _, e := range p.end[1:] {
		b = min(b, e)
	}
	return b
}

func (p *playout) pos(now time.Time) float64 {
	if !p.playing {
		return p.played
	}
	return p.resumeAt + now.Sub(p.resumeWall).Seconds()
}

// settle notes a stall that began before now.
func (p *playout) settle(now time.Time) {
	if !p.playing {
		return
	}
	buf := p.buffered()
	if p.pos(now) >= buf {
		p.playing = false
		p.played = buf
		p.stallFrom = p.resumeWall.Add(time.Duration((buf - p.resumeAt) * float64(time.Second)))
		p.stalls++
	}
}

func (p *playout) endStall(now time.Time) {
	d := now.Sub(p.stallFrom)
	p.stallTime += d
	p.maxStall = max(p.maxStall, d)
}

// place puts track at media time at (where it joins, or rejoins after it
// fell out of the window: a player then seeks forward if it must).
func (p *playout) place(track int, at float64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settle(now)
	p.placed[track], p.begin[track], p.end[track] = true, at, at
	if p.started && p.pos(now) < at {
		if p.playing {
			p.resumeWall, p.resumeAt = now, at
		} else {
			p.played = at
		}
	}
	p.update(now)
}

// add records sec of media of track downloaded at now; it returns whether
// playback has started, when, and the stalls so far.
func (p *playout) add(track int, sec float64, now time.Time) (bool, time.Time, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settle(now)
	p.end[track] += sec
	p.update(now)
	return p.started, p.startAt, p.stalls
}

func (p *playout) update(now time.Time) {
	buf := p.buffered()
	switch {
	case !p.started:
		from := p.begin[0]
		for i, ok := range p.placed {
			if !ok {
				return
			}
			from = max(from, p.begin[i])
		}
		if buf <= from {
			return
		}
		p.started, p.startAt = true, now
		p.playing, p.resumeWall, p.resumeAt = true, now, from
	case !p.playing && buf > p.played:
		p.endStall(now)
		p.playing, p.resumeWall, p.resumeAt = true, now, p.played
	}
}

// stalled reports whether the player is stalled at now.
func (p *playout) stalled(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settle(now)
	return p.started && !p.playing
}

// finish closes the model at the end of the run.
func (p *playout) finish(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settle(now)
	if p.started && !p.playing {
		p.endStall(now)
		p.playing = true // counted once
		p.resumeWall, p.resumeAt = now, p.played
	}
}
