package rtmp

import (
	"errors"
	"io"
	"net"
)

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}
