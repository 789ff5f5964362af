// Package hub is the fan-out point of one live stream: a publisher writes
// frames into a Hub, and any number of Subscribers read them. Viewers get a
// per-viewer drop policy so that a slow link never slows the stream or other
// viewers; lossless subscribers (downstream relays, the packager) get every
// frame or are closed.
//
// Frames are built once per stream (av.New) and shared by pointer: the cost
// per viewer per frame is one short lock, a pointer stored in a preallocated
// ring and, when the viewer was idle, a non-blocking channel send.
//
// # Sessions and timestamps
//
// A publisher calls Begin, Write for every frame, then End. Subscribers stay
// across sessions and see av.EventPublish and av.EventUnpublish frames in
// the stream. The first session's timestamps pass through untouched; a later
// session's are shifted by one offset so that they continue just after the
// last timestamp delivered. Metadata and sequence headers of a new session
// are ordinary frames of the stream.
//
// # Instant start
//
// A subscriber of a live stream first receives the latest onMetaData, the
// AVC and AAC sequence headers, then every frame since the last keyframe in
// arrival order, then live frames. Without a cached keyframe its video starts
// at the next keyframe. This join burst is queued in full and is not counted
// as backlog by the drop policy.
//
// # Drop policy (viewers)
//
// At every enqueue the viewer's backlog is the larger fraction of two limits:
// media time from its oldest queued media frame to the new frame against
// Config.ViewerQueue, and queued frames against Config.ViewerQueueFrames.
// The media time is measured on the hub's arrival clock, which runs with the
// wall clock but not ahead of the stream: frames that arrive together (the
// start-up burst of an upstream, which sends its GOP cache at once, or a
// publisher catching up after a stall) share one arrival time, so only what
// the viewer leaves waiting counts, not what it could not have read yet.
// Media arriving faster than real time earns at most 10 s of such credit.
// Likewise a media frame counts toward ViewerQueueFrames only once it has
// waited longer than the write batch plus 100 ms (a long GOP cache can be
// more than a quarter of the bound), and a full queue drops all media.
//
//	≥ 1/4  disposable video is dropped (nothing references it)
//	≥ 1/2  every non-key video frame is dropped; the viewer waits for a
//	       keyframe, which is queued only below 3/4
//	≥ 3/4  keyframes are dropped too
//	≥ 1    audio is dropped too; a viewer that stays there for
//	       Config.SlowViewerTimeout of media time is closed with ErrTooSlow
//
// Sequence headers, data messages and events are never dropped; if one finds
// the queue completely full the viewer is closed with ErrTooSlow. Frames are
// never reordered, and after any dropped reference frame no video is queued
// until a keyframe.
package hub
