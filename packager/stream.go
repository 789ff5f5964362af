package packager

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/relaymesh/relaymesh/internal/av"
)

// stream is one stream being packaged: a pump goroutine feeding its
// segmenter, and the state HTTP handlers read.
type stream struct {
	p         *Packager
	app, name string
	app_      AppConfig
	log       *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	// pumpCtx ends the pump alone: the stream ends visibly (see end) and
	// serves its ended playlists for EndedLinger before it stops.
	pumpCtx    context.Context
	pumpCancel context.CancelFunc
	ready      chan struct{} // closed once subscribed (or failed: see startErr)
	// polls: when each client last asked for a media playlist without
	// _HLS_msn (firstload.go); st.mu.
	polls map[pollKey]time.Time
	done  chan struct{} // closed when the pump has stopped
	// forgotten is closed once the packager has forgotten the stream and
	// kept its resume point (stop).
	forgotten chan struct{}

	startErr   error
	lastAccess atomic.Int64 // unix nanoseconds
	viewers    *viewerSet
	// viewerGauge is the stream's series of the viewers metric.
	viewerGauge prometheus.Gauge
	audience    *audience // by protocol, over AudienceWindow (audience.go)

	mu      sync.Mutex
	seg     *segmenter
	changed chan struct{} // closed and replaced on every change of seg
	stopped bool
	ended   bool      // the stream ended: playlists carry EXT-X-ENDLIST, the manifest is static
	ast     time.Time // DASH availabilityStartTime: wall clock at media time 0
	// resumeAST is the availabilityStartTime of the run this one resumes:
	// kept when the session id is (the media clock goes on).
	resumeAST time.Time
	cache     map[string]*rendered
	segMax    time.Duration // longest segment so far (TARGETDURATION)
	// dashStarted: an MPD was served once its window covered its delay,
	// or after the waits for that (dashWindowReady); later requests
	// do not wait for it
	dashStarted bool
}

// rendered is a playlist or manifest rendered once for a version of the stream.
type rendered struct {
	version uint64
	body    []byte
	gz      []byte // body compressed with gzip, made on the first request that accepts it
	etag    string
	mod     time.Time
}

func (p *Packager) newStream(app, name string) *stream {
	ctx, cancel := context.WithCancel(p.ctx)
	pctx, pcancel := context.WithCancel(ctx)
	st := &stream{
		p: p, app: app, name: name, app_: p.cfg.app(app),
		log:        p.cfg.Logger.With("app", app, "stream", name),
		ctx:        ctx,
		cancel:     cancel,
		pumpCtx:    pctx,
		pumpCancel: pcancel,
		ready:      make(chan struct{}),
		done:       make(chan struct{}),
		forgotten:  make(chan struct{}),
		viewers:    newViewerSet(p.cfg.ViewerWindow, p.cfg.MaxViewersTracked),
		changed:    make(chan struct{}),
		cache:      make(map[string]*rendered),
	}
	st.audience = newAudience(p.cfg.AudienceWindow, p.cfg.MaxViewersTracked)
	st.viewerGauge = p.m.viewers.WithLabelValues(app, name)
	hls := st.app_.HLS
	rp := p.takeResume(app + "/" + name)
	st.seg = newSegmenter(segmenterConfig{
		segMin:     p.cfg.SegmentMinDuration.Milliseconds(),
		partTarget: p.cfg.PartTarget.Milliseconds(),
		count:      p.cfg.SegmentCount,
		keep:       p.cfg.SegmentCount + 3,
		maxBytes:   p.cfg.MaxSegmentBytes,
		parts:      hls == HLSLowLatency,
		ts:         hls == HLSMPEGTS,
	}, st.log, p.now, rp)
	st.seg.key = app + "/" + name
	if rp != nil {
		st.resumeAST = rp.ast
	}
	st.seg.onSegment = func(r Rendition, _ int) { p.m.segments.WithLabelValues(r.String()).Inc() }
	st.seg.onPart = func(r Rendition) { p.m.parts.WithLabelValues(r.String()).Inc() }
	st.touch()
	return st
}

func (st *stream) touch() { st.lastAccess.Store(st.p.now().UnixNano()) }

// start subscribes and runs the pump. It closes ready when subscribed.
func (st *stream) start() {
	defer close(st.done)
	sctx, cancel := context.WithTimeout(st.ctx, st.p.cfg.MaxWait)
	sub, err := st.p.src.Subscribe(sctx, st.app, st.name)
	cancel()
	if err != nil {
		st.startErr = err
		close(st.ready)
		st.stop()
		return
	}
	close(st.ready)
	st.log.Info("packaging started")
	st.p.m.streams.Inc()
	defer st.p.m.streams.Dec()
	st.armLinger(st.p.cfg.Linger)
	quiet := time.AfterFunc(st.p.cfg.EndGrace, func() {
		st.log.Info("no media within the end grace: ending the stream", "grace", st.p.cfg.EndGrace)
		st.pumpCancel()
	})
	err = st.pump(sub, quiet)
	quiet.Stop()
	sub.Close()
	if st.ctx.Err() == nil {
		// Not stopped for want of viewers nor by Close: the source ended,
		// or End was called. Say so in the playlists, for a while.
		st.end()
		if err != nil && !errors.Is(err, context.Canceled) {
			st.log.Info("stream ended", "err", err)
		} else {
			st.log.Info("stream ended")
		}
		t := time.NewTimer(st.p.cfg.EndedLinger)
		select {
		case <-t.C:
		case <-st.ctx.Done():
		}
		t.Stop()
	}
	st.stop()
	st.log.Info("packaging stopped")
}

// end marks the stream ended: the segment in progress is closed, media
// playlists get EXT-X-ENDLIST, the manifest becomes static, waiters wake
// up.
func (st *stream) end() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended || st.stopped {
		return
	}
	st.ended = true
	st.seg.endOfStream()
	st.seg.markChanged()
	st.noteChange()
}

// maxBatchBytes bounds the payload read from the hub at once.
const maxBatchBytes = 1 << 20

// pump feeds the segmenter until the subscription or pumpCtx ends; quiet
// fires EndGrace after the last media frame.
func (st *stream) pump(sub Subscription, quiet *time.Timer) error {
	buf := make([]*av.Frame, 0, 256)
	for {
		frames, err := sub.Next(st.pumpCtx, buf, maxBatchBytes)
		if err != nil {
			return err
		}
		media := false
		st.mu.Lock()
		v := st.seg.changes()
		for _, f := range frames {
			st.seg.push(f)
			media = media || ((f.Kind == av.KindVideo || f.Kind == av.KindAudio) && !f.SeqHeader)
		}
		if media {
			quiet.Reset(st.p.cfg.EndGrace)
		}
		if st.seg.changes() != v {
			st.noteChange()
		}
		st.mu.Unlock()
		clear(frames)
		buf = frames[:0]
	}
}

// noteChange wakes the waiters; st.mu is held. Once the stream is stopped
// its channel is closed for good (stop woke everyone): a batch the pump was
// pushing while stop ran must not close it again.
func (st *stream) noteChange() {
	if st.stopped {
		return
	}
	if st.ast.IsZero() && !st.resumeAST.IsZero() && st.seg.resumed() {
		st.ast = st.resumeAST
	}
	if cur := st.seg.inProgress(); st.ast.IsZero() && cur != nil && len(st.seg.kept()) > 1 {
		// The first segment is complete: the frame that cut it is live
		// (the hub's GOP cache holds frames from the last keyframe only).
		st.ast = st.p.now().Add(-time.Duration(cur.start) * time.Millisecond)
	}
	close(st.changed)
	st.changed = make(chan struct{})
}

// stop ends the stream: the pump stops, waiters wake up, the packager
// forgets it and keeps where it stopped. Called twice (the linger's stop
// and the pump's return), the first call forgets and the second waits for
// it: the pump's return closes done, and a request waiting on done must
// find the resume point kept, not the stream gone without it (a second
// forget, without a resume point, used to remove the stream first).
func (st *stream) stop() {
	st.cancel()
	st.mu.Lock()
	first := !st.stopped
	var rp *resumePoint
	if first {
		st.stopped = true
		close(st.changed)
		if rp = st.seg.resumePoint(st.p.now()); rp != nil {
			rp.ast = st.ast
		}
	}
	st.mu.Unlock()
	if first {
		st.p.forget(st, rp)
		close(st.forgotten)
	}
	<-st.forgotten
}

// serving tells whether st has a complete segment to serve and goes on.
func (st *stream) serving() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return !st.stopped && !st.ended && st.seg.newest() != nil
}

// armLinger stops the stream once nobody asked for it for Linger.
func (st *stream) armLinger(d time.Duration) {
	time.AfterFunc(d, func() {
		if next, again := st.lingerCheck(); again {
			st.armLinger(next)
		}
	})
}

// lingerCheck stops the stream if nobody asked for it for Linger, or
// tells when to look again. It decides under p.mu, where requests look
// the stream up and touch it (Packager.stream): a request either counts
// here or finds the stream stopping and waits for the next run.
func (st *stream) lingerCheck() (next time.Duration, again bool) {
	if st.ctx.Err() != nil || st.app_.AlwaysOn {
		return 0, false
	}
	p := st.p
	p.mu.Lock()
	if p.held[st.app+"/"+st.name] != nil {
		p.mu.Unlock()
		return p.cfg.Linger, true
	}
	idle := p.now().Sub(time.Unix(0, st.lastAccess.Load()))
	if idle < p.cfg.Linger {
		p.mu.Unlock()
		return p.cfg.Linger - idle, true
	}
	st.cancel() // from here on, a request waits for st.done
	p.mu.Unlock()
	st.log.Debug("no viewers: stopping")
	st.stop()
	return 0, false
}

// errStopped is returned by waits on a stream that has stopped.
var errStopped = errors.New("packager: stream stopped")

// errEnded is returned by waits on a stream that has ended (nothing more
// will come).
var errEnded = errors.New("packager: stream ended")

// waitFor waits until cond (called with st.mu held) is true, the stream
// stops, ctx ends or MaxWait passes. It returns with st.mu held.
func (st *stream) waitFor(ctx context.Context, cond func() bool) error {
	var timer *time.Timer
	st.mu.Lock()
	for {
		if cond() {
			if timer != nil {
				timer.Stop()
			}
			return nil
		}
		if st.stopped {
			return errStopped
		}
		if st.ended {
			return errEnded
		}
		if timer == nil {
			timer = time.NewTimer(st.p.cfg.MaxWait)
			defer timer.Stop()
			st.p.m.waiting.Inc()
			defer st.p.m.waiting.Dec()
		}
		ch := st.changed
		st.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			st.mu.Lock()
			return ctx.Err()
		case <-timer.C:
			st.mu.Lock()
			if cond() {
				return nil
			}
			return context.DeadlineExceeded
		}
		st.mu.Lock()
	}
}
