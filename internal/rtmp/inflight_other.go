//go:build !linux

package rtmp

import "errors"

// haveKernelQueue: elsewhere the writer does not know what the kernel holds
// for the peer; newInflight returns nil and a slow peer shows up only as
// short writes and, at the end, the write timeout.
const haveKernelQueue = false

func kernelQueue(uintptr) (notsent, outq int) { return 0, 0 }

func setNotSentLowat(uintptr, int) error {
	return errors.New("TCP_NOTSENT_LOWAT is set on Linux only")
}
