// Package hub is the fan-out point of one live stream: a publisher writes
// frames into a Hub, and any number of Subscribers read them. Viewers get a
// per-viewer drop policy so that a slow link never slows the stream or other
// viewers; lossless subscribers (downstream relays, the packager) get every
// frame or are closed.
//
// Frames are built once per stream (av.New) and shared by pointer: the cost
// per viewer per frame is one short lock, a pointer stored in a preallocated
// ring and, when the viewer was idle, a non-blocking channel send.
package hub
