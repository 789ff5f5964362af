package av

import "time"

// epoch is where Monotonic counts from.
var epoch = time.Now()

// Monotonic is a monotonic clock in nanoseconds (since the process started):
// the hub stamps each frame's arrival with it (Frame.Arrived), and a writer
// measures how long the frame waited until it was handed to the kernel.
func Monotonic() int64 { return int64(time.Since(epoch)) }
