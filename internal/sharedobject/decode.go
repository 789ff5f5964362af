package sharedobject

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Decode decodes the body of one shared-object message with DefaultLimits.
// amf3 is true for RTMP message type 16 (an encoding byte precedes the
// layout of type 19) and false for type 19. Values may be avmplus-marked
// AMF3 in both.
func Decode(payload []byte, amf3 bool) (Message, error) {
	return DefaultLimits.Decode(payload, amf3)
}

// Decode decodes the body of one shared-object message within the limits l
// (zero fields take their defaults). Errors wrap ErrMalformed, or are ErrAMF3.
func (l Limits) Decode(payload []byte, amf3 bool) (Message, error) {
	l = l.WithDefaults()
	var m Message
	if len(payload) > l.MaxMessageBytes {
		return m, malformed("message of %d bytes exceeds the limit of %d", len(payload), l.MaxMessageBytes)
	}
	b := payload
	if amf3 {
		if len(b) < 1 {
			return m, malformed("empty AMF3 shared-object message")
		}
		if b[0] != 0 {
			return m, fmt.Errorf("%w (encoding byte %d)", ErrAMF3, b[0])
		}
		b = b[1:]
	}
	name, n, err := l.key(b, "object name")
	if err != nil {
		return m, err
	}
	b = b[n:]
	if len(b) < 12 {
		return m, malformed("truncated header")
	}
	m.Name = name
	m.Version = binary.BigEndian.Uint32(b)
	m.Persistent = binary.BigEndian.Uint32(b[4:])&2 != 0
	b = b[12:] // version, flags, 4 reserved bytes
	for len(b) > 0 {
		if len(b) < 5 {
			return m, malformed("truncated event header")
		}
		t := EventType(b[0])
		size := binary.BigEndian.Uint32(b[1:])
		if uint64(size) > uint64(len(b)-5) {
			return m, malformed("%v event of %d bytes in %d", t, size, len(b)-5)
		}
		data := b[5 : 5+int(size)]
		b = b[5+int(size):]
		if m.Events, err = l.appendEvents(m.Events, t, data); err != nil {
			return m, err
		}
		if len(m.Events) > l.MaxEvents {
			return m, malformed("more than %d events", l.MaxEvents)
		}
	}
	return m, nil
}

// key reads a u16-length UTF-8 string bounded by MaxKeyBytes.
func (l Limits) key(b []byte, what string) (string, int, error) {
	if len(b) >= 2 {
		if n := int(binary.BigEndian.Uint16(b)); n > l.MaxKeyBytes {
			return "", 0, malformed("%s of %d bytes exceeds the limit of %d", what, n, l.MaxKeyBytes)
		}
	}
	s, n, err := readString(b)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", what, err)
	}
	return s, n, nil
}

// handler reads the handler name of a send-message event: an AMF0 string
// with its marker or, as an AMF3 encoder may write it, an avmplus-marked
// AMF3 string.
func (l Limits) handler(data []byte) (string, int, error) {
	if len(data) > 0 && data[0] == mString {
		h, n, err := l.key(data[1:], "handler name")
		return h, 1 + n, err
	}
	if len(data) > 0 && data[0] == mAVMPlus {
		v, n, err := readValue(data, 0) // a string needs no nesting
		if err != nil {
			return "", 0, fmt.Errorf("handler name: %w", err)
		}
		h, ok := v.(string)
		if !ok {
			return "", 0, malformed("send-message handler is %T, not a string", v)
		}
		if len(h) > l.MaxKeyBytes || len(h) > math.MaxUint16 {
			return "", 0, malformed("handler name of %d bytes exceeds the limit of %d", len(h), min(l.MaxKeyBytes, math.MaxUint16))
		}
		return h, n, nil
	}
	return "", 0, malformed("send-message handler is not a string")
}

func (l Limits) appendEvents(evs []Event, t EventType, data []byte) ([]Event, error) {
	switch t {
	case EventUse, EventRelease, EventClear, EventUseSuccess:
		if len(data) != 0 {
			return evs, malformed("%v event carries %d bytes of data", t, len(data))
		}
		return append(evs, Event{Type: t}), nil

	case EventSuccess, EventRemove, EventRequestRemove:
		k, n, err := l.key(data, "slot key")
		if err != nil {
			return evs, err
		}
		if n != len(data) {
			return evs, malformed("%v event has %d trailing bytes", t, len(data)-n)
		}
		return append(evs, Event{Type: t, Key: k}), nil

	case EventRequestChange:
		k, n, err := l.key(data, "slot key")
		if err != nil {
			return evs, err
		}
		var v any
		if n < len(data) { // a key without a value sets the slot to null (Red5 accepts it)
			var vn int
			if v, vn, err = readValue(data[n:], l.MaxDepth); err != nil {
				return evs, fmt.Errorf("slot %q: %w", k, err)
			}
			n += vn
		}
		if n != len(data) {
			return evs, malformed("%v event has %d trailing bytes", t, len(data)-n)
		}
		return append(evs, Event{Type: t, Key: k, Value: v}), nil

	case EventChange:
		for len(data) > 0 {
			k, n, err := l.key(data, "slot key")
			if err != nil {
				return evs, err
			}
			v, vn, err := readValue(data[n:], l.MaxDepth)
			if err != nil {
				return evs, fmt.Errorf("slot %q: %w", k, err)
			}
			data = data[n+vn:]
			evs = append(evs, Event{Type: t, Key: k, Value: v})
			if len(evs) > l.MaxEvents {
				return evs, malformed("more than %d events", l.MaxEvents)
			}
		}
		return evs, nil

	case EventSendMessage:
		h, n, err := l.handler(data)
		if err != nil {
			return evs, err
		}
		data = data[n:]
		var args []any
		for len(data) > 0 {
			v, vn, err := readValue(data, l.MaxDepth)
			if err != nil {
				return evs, fmt.Errorf("handler %q argument %d: %w", h, len(args), err)
			}
			args = append(args, v)
			data = data[vn:]
		}
		return append(evs, Event{Type: t, Handler: h, Args: args}), nil

	case EventStatus:
		code, n, err := l.key(data, "status code")
		if err != nil {
			return evs, err
		}
		level, ln, err := l.key(data[n:], "status level")
		if err != nil {
			return evs, err
		}
		if n+ln != len(data) {
			return evs, malformed("status event has %d trailing bytes", len(data)-n-ln)
		}
		return append(evs, Event{Type: t, Code: code, Level: level}), nil
	}
	return evs, malformed("unknown event type %d", uint8(t))
}
