package sharedobject

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// AppendEncode appends the body of m as an RTMP shared-object message to dst:
// type 16 (with the AMF0 encoding byte) when amf3 is true, type 19 otherwise.
// On error dst is returned unchanged.
func (m Message) AppendEncode(dst []byte, amf3 bool) ([]byte, error) {
	out := dst
	if amf3 {
		out = append(out, 0)
	}
	var err error
	if out, err = appendKey(out, m.Name, "object name"); err != nil {
		return dst, err
	}
	var flags uint32
	if m.Persistent {
		flags = 2
	}
	out = binary.BigEndian.AppendUint32(out, m.Version)
	out = binary.BigEndian.AppendUint32(out, flags)
	out = append(out, 0, 0, 0, 0)
	for i := range m.Events {
		if out, err = appendEvent(out, &m.Events[i]); err != nil {
			return dst, fmt.Errorf("event %d (%v): %w", i, m.Events[i].Type, err)
		}
	}
	return out, nil
}

// appendKey appends a u16-length string without marker.
func appendKey(dst []byte, s, what string) ([]byte, error) {
	if len(s) > math.MaxUint16 {
		return dst, fmt.Errorf("sharedobject: %s of %d bytes does not fit 16 bits", what, len(s))
	}
	if !utf8.ValidString(s) {
		return dst, fmt.Errorf("sharedobject: %s is not UTF-8", what)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...), nil
}

func appendEvent(dst []byte, e *Event) ([]byte, error) {
	if !e.Type.Valid() {
		return dst, fmt.Errorf("sharedobject: unknown event type %d", uint8(e.Type))
	}
	start := len(dst)
	dst = append(dst, byte(e.Type), 0, 0, 0, 0) // length patched below
	var err error
	switch e.Type {
	case EventUse, EventRelease, EventClear, EventUseSuccess:
	case EventSuccess, EventRemove, EventRequestRemove:
		dst, err = appendKey(dst, e.Key, "slot key")
	case EventRequestChange, EventChange:
		if dst, err = appendKey(dst, e.Key, "slot key"); err == nil {
			dst, err = AppendValue(dst, e.Value)
		}
	case EventSendMessage:
		dst = append(dst, mString)
		if dst, err = appendKey(dst, e.Handler, "handler name"); err != nil {
			break
		}
		for _, a := range e.Args {
			if dst, err = AppendValue(dst, a); err != nil {
				break
			}
		}
	case EventStatus:
		if dst, err = appendKey(dst, e.Code, "status code"); err == nil {
			dst, err = appendKey(dst, e.Level, "status level")
		}
	}
	if err != nil {
		return dst[:start], err
	}
	size := len(dst) - start - 5
	if uint64(size) > math.MaxUint32 {
		return dst[:start], fmt.Errorf("sharedobject: event of %d bytes", size)
	}
	binary.BigEndian.PutUint32(dst[start+1:], uint32(size))
	return dst, nil
}
