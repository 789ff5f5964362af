package packager

import "github.com/relaymesh/relaymesh/internal/av"

// Rendition is one version of a stream made by dropping frames.
type Rendition uint8

// The renditions, heaviest first.
const (
	// Full carries every frame.
	Full Rendition = iota
	// Lite drops the disposable (non-reference) video frames. For a stream
	// without any (an encoder run without B-frames) it drops instead the
	// second half of each GOP, from the frame at half the previous GOP's
	// length up to the next keyframe: frames only ever reference frames
	// earlier in decode order, so everything kept still decodes; the picture
	// holds still for the rest of the GOP. The first GOP of a session, whose
	// length is not known yet, is kept whole in that case.
	Lite
	// Key carries only keyframes (one picture per GOP) and all the audio.
	Key
	// Audio carries only the audio.
	Audio
	numRenditions
)

var renditionNames = [numRenditions]string{"full", "lite", "key", "audio"}

func (r Rendition) String() string {
	if r < numRenditions {
		return renditionNames[r]
	}
	return "rendition?"
}

// parseRendition returns the rendition with the given name.
func parseRendition(s string) (Rendition, bool) {
	for i, n := range renditionNames {
		if n == s {
			return Rendition(i), true
		}
	}
	return 0, false
}

// videoFilter decides which video frames a rendition keeps. Audio is kept
// whole by every rendition; Audio keeps no video. Sequence headers are not
// frames of a rendition (they go into the init segment).
type videoFilter struct {
	r Rendition

	// Lite state, per GOP (decode order from a keyframe).
	pos         int  // index of the current frame in its GOP
	lastGOP     int  // frame count of the previous complete GOP (0: unknown)
	sawDisp     bool // the current GOP has a disposable frame
	tailMode    bool // this GOP drops its tail (the previous one had no disposable frame)
	dropping    bool // tail mode: the tail has begun; drop up to the next keyframe
	gopStarted  bool
	prevHadDisp bool
}

// keep reports whether the rendition keeps video frame f (not a sequence
// header). It must see every video frame of the stream, in order.
func (v *videoFilter) keep(f *av.Frame) bool {
	switch v.r {
	case Full:
		return true
	case Key:
		return f.Keyframe
	case Audio:
		return false
	}
	// Lite.
	if f.Keyframe {
		if v.gopStarted {
			v.lastGOP = v.pos
			v.prevHadDisp = v.sawDisp
		}
		v.gopStarted = true
		v.pos = 0
		v.sawDisp = false
		v.dropping = false
		v.tailMode = v.lastGOP > 0 && !v.prevHadDisp
	}
	if !v.gopStarted {
		return false // nothing decodes before the first keyframe anyway
	}
	pos := v.pos
	v.pos++
	if f.Disposable {
		v.sawDisp = true
		return false
	}
	if v.tailMode && !f.Keyframe && pos >= (v.lastGOP+1)/2 {
		v.dropping = true
	}
	return !v.dropping
}

// warmingUp reports whether lite keeps the current GOP whole only because it
// has no GOP length to halve yet (the first GOP after a reset, as long as no
// disposable frame was seen in it): what it keeps then is full's size, not
// lite's.
func (v *videoFilter) warmingUp() bool {
	return v.r == Lite && v.gopStarted && v.lastGOP == 0 && !v.sawDisp
}

// reset forgets the GOP history (a new publishing session).
func (v *videoFilter) reset() { *v = videoFilter{r: v.r} }
