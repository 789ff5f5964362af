// Package packager serves live streams of a hub as HLS and DASH.
//
// The packager is one more lossless subscriber of a stream's hub. While a
// stream has HTTP viewers (plus a linger), a pump goroutine reads its frames
// and a segmenter cuts them into CMAF (fragmented MP4) segments at keyframes,
// with low-latency HLS parts inside each segment. The same segments serve the
// HLS media playlists and the DASH manifest; MPEG-TS segments are made as
// well for apps configured for it (old set-top boxes).
//
// Renditions are made by dropping frames, never by transcoding: full (every
// frame), lite (no disposable frames, or the tail of each GOP when the stream
// has none), key (keyframes only) and audio (audio only). Players' ABR logic
// moves slow viewers down to the lighter renditions.
//
// Segments are produced once, driven by the stream, whatever the number of
// viewers: a request for a segment or part that does not exist yet waits (a
// bounded time) for the one production, and a segment still being written is
// streamed to every waiter from the same buffer. Handler serves /hls/… and
// /dash/…; see docs/hls-dash.md for the URL layout and cache headers.
package packager
