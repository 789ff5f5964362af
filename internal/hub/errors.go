package hub

import "errors"

// Reasons a Subscriber stops. Next returns one of them (or the context's
// error); Err reports only the first two, the hub's own decisions.
var (
	// ErrTooSlow: a viewer fell so far behind that it lost audio for
	// SlowViewerTimeout, or a frame that is never dropped found its queue full.
	ErrTooSlow = errors.New("hub: viewer too slow")
	// ErrOverflow: a lossless subscriber's queue overflowed.
	ErrOverflow = errors.New("hub: lossless subscriber queue overflow")
	// ErrClosed: the subscriber was closed by its owner (Close).
	ErrClosed = errors.New("hub: subscriber closed")
)
