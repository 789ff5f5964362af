package av

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadNAL wraps every malformed AVCC access unit error.
var ErrBadNAL = errors.New("malformed AVCC access unit")

// NextNAL splits the first NAL unit off an AVCC access unit whose NAL units
// are prefixed with lenSize-byte lengths (1, 2 or 4): it returns the unit and
// the rest. Nothing is copied or allocated on success.
func NextNAL(au []byte, lenSize int) (nal, rest []byte, err error) {
	if len(au) < lenSize {
		return nil, nil, fmt.Errorf("%w: truncated NAL length", ErrBadNAL)
	}
	var n int
	switch lenSize {
	case 1:
		n = int(au[0])
	case 2:
		n = int(binary.BigEndian.Uint16(au))
	case 4:
		n = int(binary.BigEndian.Uint32(au))
	default:
		return nil, nil, fmt.Errorf("%w: NAL length size %d", ErrBadNAL, lenSize)
	}
	au = au[lenSize:]
	if n <= 0 || n > len(au) {
		return nil, nil, fmt.Errorf("%w: NAL unit of %d bytes in %d", ErrBadNAL, n, len(au))
	}
	return au[:n], au[n:], nil
}
