package hub

import "time"

// arrivalClock places each frame of a stream on the media timeline at the
// moment it arrived in the hub: the media time a viewer reading at real-time
// speed could have received by then. It advances with the wall clock, never
// runs ahead of the newest timestamp (a publisher slower than real time sets
// the pace) and never lags more than maxBurst behind it.
//
// The drop policy measures a viewer's backlog on this clock rather than on
// the frames' own timestamps: frames that arrive together (an upstream's
// start-up burst, which is the parent's GOP cache sent at once, or a
// publisher catching up after a network stall) share one arrival time, so
// they are not a backlog the viewer failed to read; whatever the viewer
// leaves queued afterwards is, by the wall-clock time it waits.
type arrivalClock struct {
	valid  bool
	edge   uint32 // newest media timestamp so far
	at     uint32 // arrival time of the last media frame, on the media timeline
	wallMS int64  // the wall clock then, in ms
}

// maxBurst bounds how much media arriving at once (faster than real time)
// is not counted as backlog: a publisher that sends faster than real time
// for longer is measured by its timestamps again.
const maxBurst = 10 * time.Second

// arrive returns the arrival time of a media frame with timestamp ts at wall
// time now (ms). Only droppable media drives the clock: the timestamps of
// metadata and sequence headers are often those of the session's start,
// which an upstream sends ahead of its GOP cache.
func (c *arrivalClock) arrive(ts uint32, now int64) uint32 {
	if !c.valid {
		c.valid, c.edge, c.at, c.wallMS = true, ts, ts, now
		return ts
	}
	if int32(ts-c.edge) > 0 {
		c.edge = ts
	}
	elapsed := max(now-c.wallMS, 0)
	c.wallMS = now
	at := c.edge // after a long silence no burst credit is left
	if elapsed < maxBurst.Milliseconds() {
		at = c.at + uint32(elapsed)
	}
	if int32(at-c.edge) > 0 {
		at = c.edge // not ahead of the stream
	}
	if lag := int64(int32(c.edge - at)); lag > maxBurst.Milliseconds() {
		at = c.edge - uint32(maxBurst.Milliseconds())
	}
	c.at = at
	return at
}

// wallClock is the registry's default clock: monotonic milliseconds.
func wallClock() func() int64 {
	start := time.Now()
	return func() int64 { return time.Since(start).Milliseconds() }
}
