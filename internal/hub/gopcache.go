package hub

import "github.com/relaymesh/relaymesh/internal/av"

// gopCache holds every frame since the last keyframe (audio, video and data
// other than metadata, in arrival order) so that a new subscriber can start
// decoding at once. It is bounded in frames and bytes; beyond either bound it
// is dropped and stays empty until the next keyframe.
type gopCache struct {
	frames          []*av.Frame
	bytes           int
	active          bool // holds a keyframe and everything after it
	maxFrames, maxB int
}

// add records f. Sequence headers and metadata are kept apart by the hub.
func (c *gopCache) add(f *av.Frame) {
	if f.Kind == av.KindVideo && f.Keyframe {
		c.reset()
		c.active = true
	}
	if !c.active {
		return
	}
	if len(c.frames)+1 > c.maxFrames || c.bytes+len(f.Payload) > c.maxB {
		c.reset()
		return
	}
	c.frames = append(c.frames, f)
	c.bytes += len(f.Payload)
}

// reset empties the cache until the next keyframe.
func (c *gopCache) reset() {
	clear(c.frames)
	c.frames = c.frames[:0]
	c.bytes = 0
	c.active = false
}
