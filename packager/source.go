package packager

import (
	"context"
	"errors"

	"github.com/relaymesh/relaymesh/internal/av"
)

// ErrNotFound is returned by a Source for a stream it does not have and
// cannot get; the packager answers 404.
var ErrNotFound = errors.New("packager: stream not found")

// Source gives the packager the frames of a stream. The process provides it:
// on the primary it looks the stream up in the hub registry; on a relay it may
// start pulling the stream from upstream on the first request.
type Source interface {
	// Subscribe returns a lossless subscription to app/name, or an error
	// wrapping ErrNotFound when there is no such stream. Closing the
	// subscription releases everything Subscribe acquired.
	Subscribe(ctx context.Context, app, name string) (Subscription, error)
}

// Subscription is a lossless stream of frames. The hub's *Subscriber
// satisfies it. A new subscription starts with the metadata and sequence
// headers, then the GOP cache from the last keyframe, then live frames.
type Subscription interface {
	// Next blocks until at least one frame is pending and returns the pending
	// frames appended to dst[:0], in order, up to about maxBytes of payload.
	Next(ctx context.Context, dst []*av.Frame, maxBytes int) ([]*av.Frame, error)
	// Close ends the subscription; idempotent.
	Close()
}
