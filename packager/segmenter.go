package packager

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// segmenterConfig is the part of Config the segmenter needs.
type segmenterConfig struct {
	segMin     int64 // ms
	partTarget int64 // ms
	count      int   // complete segments listed
	keep       int   // complete segments kept (listed + a few for late readers)
	maxBytes   int
	parts      bool // cut low-latency parts
	ts         bool // make MPEG-TS segments too
}

// pendingSample is a video sample waiting for the next one to learn its
// duration.
type pendingSample struct {
	dts  uint64 // 90 kHz
	cto  int32
	sync bool
	data []byte
}

// track is one fMP4 track of a session: a video rendition or the audio.
type track struct {
	rend      Rendition
	video     bool
	timescale uint32
	init      []byte
	codec     string
	parts     bool // low-latency parts are cut on this track

	filter     videoFilter
	frag       fragmenter
	pending    pendingSample
	hasPending bool
	partSync   bool // the part being collected starts with a sync sample
	nextAudio  uint64
	anchored   bool
	overflow   bool // the current segment hit MaxSegmentBytes: drop until it ends
}

// part is a low-latency HLS part: one fragment of a segment.
type part struct {
	data        []byte
	dur         time.Duration
	independent bool
}

// trackSeg is one track's share of a segment.
type trackSeg struct {
	data     []byte // fMP4 fragments so far; append-only, so readers may keep a prefix
	parts    []*part
	start    uint64 // decode time of the first sample, track timescale
	hasStart bool
	dur      uint64 // sum of the sample durations, track timescale
	// warmup: lite kept GOPs of this segment whole because it did not know
	// a GOP length yet (see videoFilter.warmingUp); its size is not lite's.
	warmup bool
}

// segment is a media segment of every rendition, cut at a keyframe.
type segment struct {
	msn    uint64
	sess   *session
	start  int64 // media time in ms (the keyframe's DTS)
	dur    int64 // ms; set when done
	done   bool
	wall   time.Time // wall-clock time when it started
	tracks []*trackSeg
	ts     [numRenditions]*tsSegment // MPEG-TS, when made
	muxed  []byte                    // the muxed file (muxed.go), once asked for
}

// session is a run of segments with fixed codec parameters. A change of
// codec parameters starts a new session with a new id (and new file names),
// and a new init segment; playlists mark it with a discontinuity, manifests
// with a new period.
type session struct {
	id string
	// tid names the files addressed by media time (DASH $Time$) and the
	// init segments DASH names: the same on every server of the mesh when
	// the stream's metadata carries a publish id (see sessionID), else id.
	tid     string
	publish string // the publish id it was made for
	first   bool   // the first session of this run of the packager
	vc      *videoConfig
	ac      *audioConfig
	tracks  []*track
	byRend  [numRenditions]*track // the video track of a rendition, or the audio track for Audio
	audio   *track
	ts      [numRenditions]*tsMuxer // MPEG-TS writers, when made
	start   int64                   // ms
	disc    int                     // discontinuity sequence number
	period  string                  // DASH Period id: the id, with the run when the id is resumed
	// nominal is the duration of the session's first complete segment
	// (ms): the grid of the $Number$ manifest (number.go).
	nominal int64
	muxInit []byte   // the muxed files' init segment (muxed.go), once asked for
	remux   *tsRemux // makes the files of ts.m3u8 (tsplay.go), once asked for
}

// hasRendition reports whether the session offers r.
func (s *session) hasRendition(r Rendition) bool { return s.byRend[r] != nil }

// sameRenditions reports whether two sessions offer the same renditions (so
// that one playlist per rendition can list segments of both).
func sameRenditions(a, b *session) bool {
	for r := Full; r < numRenditions; r++ {
		if a.hasRendition(r) != b.hasRendition(r) {
			return false
		}
	}
	return true
}

// track returns rendition r's share of the segment, or nil when the
// segment's session does not offer r.
func (seg *segment) track(r Rendition) *trackSeg {
	t := seg.sess.byRend[r]
	if t == nil {
		return nil
	}
	return seg.tracks[trackIndex(seg.sess, t)]
}

// segmenter turns the frames of one stream into segments. It is not safe for
// concurrent use: the stream's lock guards it.
type segmenter struct {
	cfg segmenterConfig
	log *slog.Logger
	now func() time.Time

	vc, ac  *videoConfig
	acfg    *audioConfig
	sess    *session
	segs    []*segment // oldest first; the last one may be in progress
	cur     *segment   // in progress, or nil
	nextMSN uint64
	disc    int

	ext       extender
	partStart int64 // ms
	lastVideo int64 // ms, DTS of the last video frame
	lastDelta int64 // ms between the last two video frames
	lastAudio int64 // ms, end of the last audio frame

	version uint64 // increases with every change readers can see
	nalus   [][]byte
	// partMax is the longest part cut so far on any track, rounded up to
	// the 10 µs a playlist prints: the PART-TARGET of the whole ladder.
	partMax time.Duration
	// partAt is when the newest part was cut (the wall clock).
	partAt time.Time

	// resume, when set, is where an earlier run of the packager for this
	// stream stopped (see resumePoint); the first session continues it.
	resume *resumePoint

	key     string // app/name, for sessionID
	publish string // the publish id of the latest metadata (PublishIDKey)

	// Hooks for metrics (may be nil).
	onSegment func(r Rendition, bytes int)
	onPart    func(r Rendition)
}

func newSegmenter(cfg segmenterConfig, log *slog.Logger, now func() time.Time, resume *resumePoint) *segmenter {
	s := &segmenter{cfg: cfg, log: log, now: now, resume: resume}
	if resume != nil {
		// One timeline for returning players and caches: the media
		// sequence goes on, behind a discontinuity (there is a gap).
		s.nextMSN = resume.nextMSN
		s.disc = resume.disc + 1
	}
	return s
}

// resumePoint is where a stopped run of a stream's packager left off: the
// next run goes on with the media sequence, one discontinuity later, and
// with the same session id when nothing forbids it.
type resumePoint struct {
	sid      string
	tid      string
	publish  string
	period   string
	nextMSN  uint64
	disc     int
	vc, ac   []byte // raw sequence headers of the session
	lastTime int64  // ms, the newest media time packaged
	ast      time.Time
	at       time.Time // when the run stopped
}

// resumePoint returns where the segmenter stands, or nil before any session.
func (s *segmenter) resumePoint(now time.Time) *resumePoint {
	if s.sess == nil {
		return nil
	}
	rp := &resumePoint{sid: s.sess.id, tid: s.sess.tid, publish: s.sess.publish, period: s.sess.period, nextMSN: s.nextMSN, disc: s.disc,
		lastTime: max(s.lastVideo, s.lastAudio), at: now}
	if s.sess.vc != nil {
		rp.vc = s.sess.vc.raw
	}
	if s.sess.ac != nil {
		rp.ac = s.sess.ac.raw
	}
	return rp
}

// resumes reports whether a first session with these parameters, starting
// at ms, may keep the stopped run's session id: same codec parameters (the
// init segments are the same), and media times past the old ones (so that
// no file name, $Time$ ones included, can come back with other bytes).
func (r *resumePoint) resumes(vc *videoConfig, ac *audioConfig, publish string, ms int64) bool {
	return r != nil && r.publish == publish && (r.vc != nil) == (vc != nil) && (r.ac != nil) == (ac != nil) &&
		string(r.vc) == string(vcRaw(vc)) && string(r.ac) == string(acRaw(ac)) && ms > r.lastTime
}

func vcRaw(vc *videoConfig) []byte {
	if vc == nil {
		return nil
	}
	return vc.raw
}

func acRaw(ac *audioConfig) []byte {
	if ac == nil {
		return nil
	}
	return ac.raw
}

// extender widens 32-bit RTMP timestamps to 64 bits across wrap-arounds.
type extender struct {
	last  uint32
	epoch int64
	init  bool
}

func (e *extender) ext(ts uint32) int64 {
	if e.init {
		switch {
		case ts < e.last && e.last-ts > 1<<31:
			e.epoch += 1 << 32
		case ts > e.last && ts-e.last > 1<<31 && e.epoch > 0:
			// A late frame from before the wrap.
			return e.epoch - 1<<32 + int64(ts)
		}
	}
	e.init = true
	e.last = ts
	return e.epoch + int64(ts)
}

// push feeds one frame.
func (s *segmenter) push(f *av.Frame) {
	switch f.Kind {
	case av.KindEvent:
		if f.Event == av.EventUnpublish {
			s.endOfStream()
		}
	case av.KindData:
		if f.Metadata {
			s.publish = publishID(f.Payload)
		}
	case av.KindVideo:
		s.pushVideo(f)
	case av.KindAudio:
		s.pushAudio(f)
	}
}

func (s *segmenter) pushVideo(f *av.Frame) {
	if f.Codec != av.CodecAVC || len(f.Payload) < 5 {
		return
	}
	if f.SeqHeader {
		if s.vc != nil && string(s.vc.raw) == string(f.Payload) {
			return
		}
		vc, err := parseVideoConfig(f.Payload)
		if err != nil {
			s.log.Warn("video sequence header ignored", "err", err)
			return
		}
		s.vc = vc
		return
	}
	if f.Payload[1] != 1 || s.vc == nil {
		return // end of sequence, or nothing decodable yet
	}
	dts := s.ext.ext(f.Timestamp)
	if s.lastVideo != 0 && dts > s.lastVideo {
		s.lastDelta = dts - s.lastVideo
	}
	if f.Keyframe {
		if s.sess == nil || s.sess.vc != s.vc || s.sess.ac != s.acfg || s.sess.publish != s.publish {
			s.finishSegment(dts)
			s.newSession(dts)
		}
		if s.cur == nil || s.cuts(dts) || s.overflowing() {
			s.finishSegment(dts)
			s.startSegment(dts)
		}
	}
	if s.cur == nil || s.sess.vc == nil || dts < s.cur.start {
		return
	}
	if s.cfg.parts && dts-s.partStart >= s.cfg.partTarget && dts > s.cur.start {
		s.cutParts(dts)
	}
	s.lastVideo = dts
	data := f.Payload[5:]
	if s.sess.vc.nalLen != 4 {
		d, err := toAVCC4(data, s.sess.vc.nalLen)
		if err != nil {
			return
		}
		data = d
	}
	kept := false
	for r := Full; r <= Key; r++ {
		t := s.sess.byRend[r]
		if t == nil || !t.filter.keep(f) {
			continue
		}
		kept = true
		if t.filter.warmingUp() {
			s.cur.tracks[trackIndex(s.sess, t)].warmup = true
		}
		s.addVideo(t, dts, f, data)
		if s.cur.ts[r] != nil {
			s.writeTSVideo(r, dts, f)
		}
	}
	if kept {
		s.version++
	}
}

func (s *segmenter) pushAudio(f *av.Frame) {
	if f.Codec != av.CodecAAC || len(f.Payload) < 2 {
		return
	}
	if f.SeqHeader {
		if s.acfg != nil && string(s.acfg.raw) == string(f.Payload) {
			return
		}
		ac, err := parseAudioConfig(f.Payload)
		if err != nil {
			s.log.Warn("audio sequence header ignored", "err", err)
			return
		}
		s.acfg = ac
		return
	}
	if s.acfg == nil || len(f.Payload) < 3 {
		return
	}
	ms := s.ext.ext(f.Timestamp)
	if s.vc == nil {
		// An audio-only stream: audio drives the segments.
		if s.sess == nil || s.sess.ac != s.acfg || s.sess.vc != nil || s.sess.publish != s.publish {
			s.finishSegment(ms)
			s.newSession(ms)
		}
		if s.cur == nil || s.cuts(ms) || s.overflowing() {
			s.finishSegment(ms)
			s.startSegment(ms)
		}
		if s.cfg.parts && ms-s.partStart >= s.cfg.partTarget && ms > s.cur.start {
			s.cutParts(ms)
		}
	}
	if s.cur == nil || s.sess.audio == nil || s.sess.ac != s.acfg {
		return
	}
	t := s.sess.audio
	ac := s.sess.ac
	pos := uint64(ms) * uint64(ac.sampleRate) / 1000
	// Count samples from an anchor; re-anchor when the RTMP clock and the
	// sample count drift apart by more than 100 ms (a gap in the audio).
	if !t.anchored || absDiff(pos, t.nextAudio) > uint64(ac.sampleRate/10) {
		// On the grid of whole frames: servers that joined the stream at
		// different frames anchor alike (a millisecond timestamp is off
		// the frame's sample position by less than half a frame).
		fl := uint64(ac.frameLen)
		t.nextAudio = (pos + fl/2) / fl * fl
		t.anchored = true
	}
	dts := t.nextAudio
	t.nextAudio += uint64(ac.frameLen)
	au := f.Payload[2:]
	s.addSample(t, dts, uint32(ac.frameLen), 0, true, au)
	s.lastAudio = ms + int64(ac.frameLen)*1000/int64(ac.sampleRate)
	for r := Full; r < numRenditions; r++ {
		if s.cur.ts[r] != nil {
			s.writeTSAudio(r, dts, au)
		}
	}
	s.version++
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// addVideo queues a video sample; the previous one gets its duration.
func (s *segmenter) addVideo(t *track, dts int64, f *av.Frame, data []byte) {
	d90 := uint64(dts) * 90
	if t.hasPending {
		p := t.pending
		s.addSample(t, p.dts, uint32(d90-p.dts), p.cto, p.sync, p.data)
	}
	t.pending = pendingSample{dts: d90, cto: f.CTS * 90, sync: f.Keyframe, data: data}
	t.hasPending = true
}

// flushPending gives the waiting video sample its duration up to end (90 kHz).
func (s *segmenter) flushPending(t *track, end uint64) {
	if !t.hasPending {
		return
	}
	p := t.pending
	t.hasPending = false
	t.pending = pendingSample{}
	if end <= p.dts {
		end = p.dts + 90*uint64(max(s.lastDelta, 1))
	}
	s.addSample(t, p.dts, uint32(end-p.dts), p.cto, p.sync, p.data)
}

func (s *segmenter) addSample(t *track, dts uint64, dur uint32, cto int32, sync bool, data []byte) {
	ts := s.cur.tracks[trackIndex(s.sess, t)]
	if t.overflow || len(ts.data)+t.frag.bytes+len(data) > s.cfg.maxBytes {
		if !t.overflow {
			s.log.Warn("segment too big, dropping frames up to the next keyframe", "rendition", t.rend, "bytes", len(ts.data)+t.frag.bytes)
		}
		t.overflow = true
		return
	}
	if !ts.hasStart {
		ts.start = dts
		ts.hasStart = true
	}
	if t.frag.empty() {
		t.partSync = sync
	}
	t.frag.add(dts, dur, cto, sync, data)
	ts.dur = dts + uint64(dur) - ts.start
}

func (s *segmenter) overflowing() bool {
	for _, t := range s.sess.tracks {
		if t.overflow {
			return true
		}
	}
	return false
}

func trackIndex(sess *session, t *track) int {
	for i, x := range sess.tracks {
		if x == t {
			return i
		}
	}
	return -1
}

// flushTrack writes the collected samples of t as one fragment of the current
// segment, as a part when the track has parts.
func (s *segmenter) flushTrack(t *track, asPart bool) {
	if t.frag.empty() {
		return
	}
	ts := s.cur.tracks[trackIndex(s.sess, t)]
	dur := t.frag.duration()
	before := len(ts.data)
	var err error
	ts.data, err = t.frag.flush(ts.data)
	if err != nil {
		s.log.Error("fragment", "rendition", t.rend, "err", err)
		ts.data = ts.data[:before]
		return
	}
	if asPart {
		d := time.Duration(dur) * time.Second / time.Duration(t.timescale)
		ts.parts = append(ts.parts, &part{
			data:        ts.data[before:len(ts.data):len(ts.data)],
			dur:         d,
			independent: t.partSync || !t.video,
		})
		s.partMax = max(s.partMax, (d + 10*time.Microsecond - 1).Truncate(10*time.Microsecond))
		s.partAt = s.now()
		if s.onPart != nil {
			s.onPart(t.rend)
		}
	}
}

// cutParts ends the current low-latency parts at ms.
func (s *segmenter) cutParts(ms int64) {
	for _, t := range s.sess.tracks {
		if !t.parts {
			continue
		}
		if t.video {
			s.flushPending(t, uint64(ms)*90)
		}
		s.flushTrack(t, true)
	}
	s.partStart = ms
	s.version++
}

// cuts reports whether a keyframe (or, audio only, a frame) at ms starts a
// new segment: the first one in a new SegmentMinDuration cell of the media
// clock, at least half of SegmentMinDuration after the segment's start. The
// choice depends on the media times alone, so servers that joined the
// stream at different keyframes cut at the same ones after a segment or
// two (with the usual GOP of SegmentMinDuration or more: at every keyframe).
func (s *segmenter) cuts(ms int64) bool {
	d := max(s.cfg.segMin, 1)
	return ms/d > s.cur.start/d && ms-s.cur.start >= d/2
}

func (s *segmenter) newSession(ms int64) {
	var id [4]byte
	_, _ = rand.Read(id[:])
	sess := &session{id: hex.EncodeToString(id[:]), vc: s.vc, ac: s.acfg, start: ms, publish: s.publish, first: s.sess == nil}
	sess.tid = sess.id
	if s.publish != "" {
		sess.tid = s.commonID(0)
	}
	sess.period = sess.tid
	if s.sess != nil {
		s.disc++
	} else if s.resume.resumes(s.vc, s.acfg, s.publish, ms) {
		sess.id, sess.tid = s.resume.sid, s.resume.tid
		sess.period = sess.tid + "-" + strconv.Itoa(s.disc)
	} else if s.resume != nil && sess.tid == s.resume.tid {
		// Media times went back (or the parameters changed) under the same
		// publish id: names by time could come back with other bytes.
		sess.tid = s.commonID(s.disc)
		sess.period = sess.tid
	}
	for salt := s.disc + 1; s.session(sess.tid) != nil || (s.sess != nil && s.sess.tid == sess.tid); salt++ {
		// The same parameters again (A, B, A): Period ids must differ.
		sess.tid = s.commonID(salt)
		sess.period = sess.tid
	}
	sess.disc = s.disc
	if s.vc != nil {
		init, err := videoInit(s.vc)
		if err != nil {
			s.log.Warn("video not packaged", "err", err)
			sess.vc = nil
		} else {
			for r := Full; r <= Key; r++ {
				t := &track{rend: r, video: true, timescale: videoTimescale, init: init, codec: s.vc.codec,
					parts: s.cfg.parts && r == Full, filter: videoFilter{r: r}}
				sess.tracks = append(sess.tracks, t)
				sess.byRend[r] = t
			}
		}
	}
	if s.acfg != nil {
		init, err := audioInit(s.acfg)
		if err != nil {
			s.log.Warn("audio not packaged", "err", err)
			sess.ac = nil
		} else {
			t := &track{rend: Audio, timescale: uint32(s.acfg.sampleRate), init: init, codec: s.acfg.codec, parts: s.cfg.parts}
			sess.tracks = append(sess.tracks, t)
			sess.audio = t
			sess.byRend[Audio] = t
		}
	}
	// The segments of the previous session stay listed, behind a
	// discontinuity, when this one offers the same renditions. When video or
	// audio came or went, the variants themselves changed: playlists start
	// afresh.
	if s.sess != nil && !sameRenditions(s.sess, sess) {
		clear(s.segs)
		s.segs = s.segs[:0]
	}
	s.sess = sess
	s.version++
}

func (s *segmenter) startSegment(ms int64) {
	if s.sess == nil || len(s.sess.tracks) == 0 {
		return
	}
	seg := &segment{msn: s.nextMSN, sess: s.sess, start: ms, wall: s.now()}
	s.nextMSN++
	seg.tracks = make([]*trackSeg, len(s.sess.tracks))
	var prev *segment
	if n := len(s.segs); n > 0 && s.segs[n-1].sess == s.sess {
		prev = s.segs[n-1]
	}
	for i := range seg.tracks {
		seg.tracks[i] = &trackSeg{}
		if prev != nil {
			// Room for a segment like the last one: no regrowing while it fills.
			seg.tracks[i].data = make([]byte, 0, len(prev.tracks[i].data)*5/4+4096)
		}
	}
	for _, t := range s.sess.tracks {
		t.overflow = false
	}
	if s.cfg.ts {
		for r := Full; r < numRenditions; r++ {
			if s.sess.hasRendition(r) {
				seg.ts[r] = s.startTS(r)
			}
		}
	}
	s.cur = seg
	s.segs = append(s.segs, seg)
	s.partStart = ms
	s.version++
}

// finishSegment ends the segment in progress at ms.
func (s *segmenter) finishSegment(ms int64) {
	seg := s.cur
	if seg == nil {
		return
	}
	if ms <= seg.start {
		ms = seg.start + max(s.lastDelta, 1)
	}
	for _, t := range s.sess.tracks {
		if t.video {
			s.flushPending(t, uint64(ms)*90)
		}
		s.flushTrack(t, t.parts)
	}
	seg.dur = ms - seg.start
	if seg.sess.nominal == 0 && seg.dur > 0 {
		seg.sess.nominal = seg.dur
	}
	for r := Full; r < numRenditions; r++ {
		if ts := seg.ts[r]; ts != nil {
			ts.finish()
		}
	}
	seg.done = true
	s.cur = nil
	if s.onSegment != nil {
		for i, t := range s.sess.tracks {
			s.onSegment(t.rend, len(seg.tracks[i].data))
		}
	}
	// Evict what nobody may ask for any more.
	complete := len(s.segs)
	if n := complete - s.cfg.keep; n > 0 {
		clear(s.segs[:n])
		s.segs = append(s.segs[:0], s.segs[n:]...)
	}
	s.version++
}

// endOfStream closes the segment in progress (the publisher left). The next
// segment starts at the next keyframe.
func (s *segmenter) endOfStream() {
	end := s.lastVideo + max(s.lastDelta, 1)
	if s.sess != nil && s.sess.vc == nil {
		end = s.lastAudio
	}
	s.finishSegment(end)
	if s.sess != nil {
		for _, t := range s.sess.tracks {
			t.filter.reset()
			t.anchored = false
		}
	}
}

// complete returns the complete segments to list (at most cfg.count).
func (s *segmenter) complete() []*segment {
	n := len(s.segs)
	if s.cur != nil {
		n--
	}
	segs := s.segs[:n]
	if len(segs) > s.cfg.count {
		segs = segs[len(segs)-s.cfg.count:]
	}
	return segs
}

// commonID is the session id every server derives alike (see sessionID).
func (s *segmenter) commonID(salt int) string {
	return sessionID(s.key, s.publish, s.vc, s.acfg, salt)
}

// session returns the session with the given id (or tid), the current one or one
// that kept segments still belong to, or nil.
func (s *segmenter) session(sid string) *session {
	if s.sess != nil && (s.sess.id == sid || s.sess.tid == sid) {
		return s.sess
	}
	for _, seg := range s.segs {
		if seg.sess.id == sid || seg.sess.tid == sid {
			return seg.sess
		}
	}
	return nil
}

// find returns the segment with the given session id and number, or nil.
func (s *segmenter) find(sid string, msn uint64) *segment {
	for _, seg := range s.segs {
		if seg.msn == msn && seg.sess.id == sid {
			return seg
		}
	}
	return nil
}

// bandwidth returns the peak and average bits per second of rendition r
// over the listed segments (of every session listed: a codec change keeps
// the measure). Segments that lite kept whole while it had no GOP length to
// halve (the first GOP of a session or after a publisher returned) are left
// out while other segments are listed: they measure full, not lite, and a
// player would skip lite for them.
func (s *segmenter) bandwidth(r Rendition) (peak, avg int) {
	segs := s.complete()
	peak, avg, ok := rate(segs, r, false)
	if !ok {
		peak, avg, _ = rate(segs, r, true)
	}
	return peak, avg
}

// rate measures rendition r over segs, with or without the warmup segments;
// ok is false when no segment counted.
func rate(segs []*segment, r Rendition, warmup bool) (peak, avg int, ok bool) {
	var bytes, ms int64
	for _, seg := range segs {
		ts := seg.track(r)
		if !seg.done || ts == nil || seg.dur <= 0 || (ts.warmup && !warmup) {
			continue
		}
		b := int64(len(ts.data))
		if bw := int(b * 8000 / seg.dur); bw > peak {
			peak = bw
		}
		bytes += b
		ms += seg.dur
	}
	if ms == 0 {
		return 0, 0, false
	}
	return peak, int(bytes * 8000 / ms), true
}

// The read API of the segmenter: what the HTTP side (playlists, manifests,
// file lookups) may know of it. Like everything else in the segmenter it
// is called with the stream's lock held; what it returns is shared with
// the segmenter and valid while that lock is held (segments are
// append-only, so a complete segment's bytes stay valid after).

// current returns the current session, or nil before the first keyframe.
func (s *segmenter) current() *session { return s.sess }

// inProgress returns the segment being written, or nil.
func (s *segmenter) inProgress() *segment { return s.cur }

// kept returns every segment still kept, listed or not, oldest first; the
// last one may be in progress.
func (s *segmenter) kept() []*segment { return s.segs }

// newest returns the newest kept segment (possibly in progress), or nil.
func (s *segmenter) newest() *segment {
	if len(s.segs) == 0 {
		return nil
	}
	return s.segs[len(s.segs)-1]
}

// next returns the number the next segment will get.
func (s *segmenter) next() uint64 { return s.nextMSN }

// lastVideoTime returns the media time (ms) of the newest video frame.
func (s *segmenter) lastVideoTime() int64 { return s.lastVideo }

// changes returns a counter that increases with every change readers can
// see: a rendering made at one value is current while it stays.
func (s *segmenter) changes() uint64 { return s.version }

// longestPart returns the longest part cut so far on any track (the
// ladder's PART-TARGET), 0 before the first one.
func (s *segmenter) longestPart() time.Duration { return s.partMax }

// lastPartAt returns when the newest part was cut (zero before any).
func (s *segmenter) lastPartAt() time.Time { return s.partAt }

// resumed reports whether the current session goes on with the session of
// the stopped run it resumes (same id, see resumePoint).
func (s *segmenter) resumed() bool {
	return s.sess != nil && s.resume != nil && s.sess.id == s.resume.sid
}

// markChanged counts a change made from outside (the stream ended).
func (s *segmenter) markChanged() { s.version++ }
