package rtmp

import "golang.org/x/sys/unix"

// haveKernelQueue: Linux reports a socket's unsent and unacknowledged bytes.
const haveKernelQueue = true

// kernelQueue asks the kernel how many bytes of the socket are not sent yet
// (SIOCOUTQNSD) and, when some are, how many are unsent or unacknowledged
// (SIOCOUTQ). When everything was sent (the usual case for a viewer that
// keeps up) the second call is skipped.
func kernelQueue(fd uintptr) (notsent, outq int) {
	n, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQNSD)
	if err != nil || n == 0 {
		return 0, 0
	}
	if q, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQ); err == nil {
		outq = q
	}
	return n, outq
}

// setNotSentLowat sets TCP_NOTSENT_LOWAT on the socket.
func setNotSentLowat(fd uintptr, n int) error {
	return unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, n)
}
