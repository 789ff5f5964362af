package rtmp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// haveKernelQueue: Linux reports a socket's unsent and unacknowledged bytes.
const haveKernelQueue = true

// kernelQueue asks the kernel how many bytes of the socket are not sent yet
// (SIOCOUTQNSD) and, when some are, how many are unsent or unacknowledged
// (SIOCOUTQ). When everything was sent (the usual case for a viewer that
// keeps up) the second call is skipped.
func kernelQueue(fd uintptr) (notsent, outq int) {
	n, ok := ioctlInt(fd, unix.SIOCOUTQNSD)
	if !ok || n == 0 {
		return 0, 0
	}
	if q, ok := ioctlInt(fd, unix.SIOCOUTQ); ok {
		outq = q
	}
	return n, outq
}

// ioctlInt reads an int the kernel reports about a socket. A raw system
// call, like the writev of the rounds: these ioctls never block, so the
// scheduler is not told about them (entering and leaving a system call has
// a cost per call, thousands a second with a large audience, and a thread
// preempted inside one lets the runtime's monitor hand its processor to
// another thread).
func ioctlInt(fd uintptr, req uint) (int, bool) {
	var v int32
	_, _, errno := unix.RawSyscall(unix.SYS_IOCTL, fd, uintptr(req), uintptr(unsafe.Pointer(&v)))
	return int(v), errno == 0
}

// setNotSentLowat sets TCP_NOTSENT_LOWAT on the socket.
func setNotSentLowat(fd uintptr, n int) error {
	return unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, n)
}
