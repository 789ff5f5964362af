package packager

import (
	"context"
	"time"
)

// Holds: a relay packages the streams the orchestrator opened on it from
// the moment it pulls them, not from its first HTTP request. Its first
// HLS or DASH viewers then find segments at once (a DASH player given the
// manifest of a packager that has just started waits for its window, or
// starts at the edge and stalls), and the relay reports the stream ready
// for HTTP players, so content steering ranks it with the warm servers
// instead of after them.

// Backoff between attempts to package a held stream whose source is not
// there (or ended).
const (
	holdRetryMin = time.Second
	holdRetryMax = 10 * time.Second
)

// Hold keeps app/name packaged from now until Release, End or EndAll,
// whether or not anyone asks for it: it starts packaging now, the linger
// does not stop it, and when its source ends (the playlists then say so,
// for EndedLinger) it starts again once the source has the stream again.
// Holding a stream held already does nothing.
func (p *Packager) Hold(app, name string) {
	if !validName(app) || !validName(name) {
		return
	}
	key := app + "/" + name
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.held[key] != nil {
		return
	}
	ctx, cancel := context.WithCancel(p.ctx)
	p.held[key] = cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.keep(ctx, app, name)
	}()
}

// Release ends a Hold: the stream goes on being packaged while it is
// asked for, and stops a Linger after its last request as usual.
func (p *Packager) Release(app, name string) {
	key := app + "/" + name
	p.mu.Lock()
	cancel := p.held[key]
	delete(p.held, key)
	if st := p.streams[key]; st != nil {
		// It lingers from now, as after a request; under p.mu, where
		// the linger decides (lingerCheck).
		st.touch()
	}
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// keep packages app/name until ctx ends, starting it again whenever it
// stops (its source refused it, or ended and the ended playlists were
// served their while).
func (p *Packager) keep(ctx context.Context, app, name string) {
	wait := holdRetryMin
	for ctx.Err() == nil {
		st, err := p.stream(ctx, app, name)
		if err == nil {
			wait = holdRetryMin
			select {
			case <-st.done:
			case <-ctx.Done():
				return
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		if err != nil {
			wait = min(2*wait, holdRetryMax)
		}
	}
}
