package hub

import "time"

// Config tunes every hub of a Registry. The zero value of a field means its
// default; see WithDefaults.
type Config struct {
	// ViewerQueue is the media time a viewer may fall behind before the drop
	// policy acts fully (audio is dropped too). Default 1s.
	ViewerQueue time.Duration
	// ViewerQueueFrames is the hard bound of a viewer queue in frames, measured
	// like ViewerQueue (the larger fraction of the two limits counts).
	// Default 1024.
	ViewerQueueFrames int
	// LosslessQueueFrames bounds the queue of a lossless subscriber; overflow
	// closes it with ErrOverflow. Default 8192.
	LosslessQueueFrames int
	// SlowViewerTimeout: a viewer that keeps losing audio for this much media
	// time is closed with ErrTooSlow. Default 10s.
	SlowViewerTimeout time.Duration
	// WriteBatch is how long viewers' writers let frames gather on purpose
	// before writing them (rtmp.write_batch): that much of a queue is not a
	// backlog, and the drop policy does not count it.
	WriteBatch time.Duration
	// GOPCacheMaxFrames bounds the GOP cache in frames. Default 2500.
	GOPCacheMaxFrames int
	// GOPCacheMaxBytes bounds the GOP cache in payload bytes. Default 32 MiB.
	// Beyond either bound the cache is dropped until the next keyframe.
	GOPCacheMaxBytes int
	// MetricsStreams bounds the streams that get their own app/stream labels
	// on the per-stream metrics (relaymesh_stream_*); the hubs beyond it are
	// summed under stream="_other". Default 100; negative: no stream has its
	// own labels.
	MetricsStreams int
}

// Defaults used by WithDefaults.
const (
	DefaultViewerQueue         = time.Second
	DefaultViewerQueueFrames   = 1024
	DefaultLosslessQueueFrames = 8192
	DefaultSlowViewerTimeout   = 10 * time.Second
	DefaultGOPCacheMaxFrames   = 2500
	DefaultGOPCacheMaxBytes    = 32 << 20
	DefaultMetricsStreams      = 100
)

// WithDefaults returns c with every zero or negative field set to its default
// (MetricsStreams: only zero; negative means none).
func (c Config) WithDefaults() Config {
	if c.ViewerQueue <= 0 {
		c.ViewerQueue = DefaultViewerQueue
	}
	if c.ViewerQueueFrames <= 0 {
		c.ViewerQueueFrames = DefaultViewerQueueFrames
	}
	if c.LosslessQueueFrames <= 0 {
		c.LosslessQueueFrames = DefaultLosslessQueueFrames
	}
	if c.SlowViewerTimeout <= 0 {
		c.SlowViewerTimeout = DefaultSlowViewerTimeout
	}
	if c.GOPCacheMaxFrames <= 0 {
		c.GOPCacheMaxFrames = DefaultGOPCacheMaxFrames
	}
	if c.GOPCacheMaxBytes <= 0 {
		c.GOPCacheMaxBytes = DefaultGOPCacheMaxBytes
	}
	if c.MetricsStreams == 0 {
		c.MetricsStreams = DefaultMetricsStreams
	}
	return c
}
