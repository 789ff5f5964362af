package sharedobject

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	amf0 "github.com/yutopp/go-amf0"
)

// Shared-object messages as an objectEncoding 3 client sends them: type 16,
// encoding byte 0, values behind the avmplus marker 0x11.

// soMsg builds a type-16 body for object "room" at version v from events
// (type byte, data).
func soMsg(v uint32, events ...[]byte) []byte {
	b := []byte{0, 0, 4, 'r', 'o', 'o', 'm'}
	b = binary.BigEndian.AppendUint32(b, v)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)
	for _, e := range events {
		b = append(b, e...)
	}
	return b
}

func soEvent(t EventType, data ...[]byte) []byte {
	d := bytes.Join(data, nil)
	b := []byte{byte(t)}
	b = binary.BigEndian.AppendUint32(b, uint32(len(d)))
	return append(b, d...)
}

func soKey(k string) []byte { return append([]byte{0, byte(len(k))}, k...) }

// a3 helpers: inline AMF3 member name and string value.
func a3Key(s string) []byte { return append([]byte{byte(len(s)<<1 | 1)}, s...) }
func a3Str(s string) []byte { return append([]byte{0x06}, a3Key(s)...) }

func TestDecodeAMF3Values(t *testing.T) {
	chatLine := bytes.Join([][]byte{
		{0x11, 0x0a, 0x0b, 0x01}, // avmplus; anonymous dynamic object
		a3Key("from"), a3Str("ann"),
		a3Key("text"), a3Str("hi"),
		a3Key("to"), {0x06, 0x02}, // string reference 1: "ann"
		a3Key("n"), {0x04, 0x03},
		{0x01},
	}, nil)
	blob := []byte{0x11, 0x0c, 0x07, 1, 2, 3}                                             // ByteArray
	list := bytes.Join([][]byte{{0x11, 0x09, 0x05, 0x01}, a3Str("a"), {0x04, 0x7f}}, nil) // ["a", 127]
	payload := soMsg(3,
		soEvent(EventUse),
		soEvent(EventRequestChange, soKey("line"), chatLine),
		soEvent(EventRequestChange, soKey("blob"), blob),
		soEvent(EventRequestChange, soKey("gone"), []byte{0x11, 0x00}), // AMF3 undefined: delete
		soEvent(EventChange, soKey("x"), []byte{0x11, 0x05, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}, soKey("y"), list),
		soEvent(EventSendMessage, []byte{0x02}, soKey("say"), list, []byte{0x11, 0x03}, []byte{0x01, 0x00}),
		soEvent(EventSendMessage, []byte{0x11}, a3Str("ping")),
	)
	m, err := Decode(payload, true)
	if err != nil {
		t.Fatal(err)
	}
	want := Message{Name: "room", Version: 3, Events: []Event{
		{Type: EventUse},
		{Type: EventRequestChange, Key: "line", Value: map[string]any{"from": "ann", "text": "hi", "to": "ann", "n": 3.0}},
		{Type: EventRequestChange, Key: "blob", Value: []byte{1, 2, 3}},
		{Type: EventRequestChange, Key: "gone", Value: Undefined{}},
		{Type: EventChange, Key: "x", Value: 1.5},
		{Type: EventChange, Key: "y", Value: []any{"a", 127.0}},
		{Type: EventSendMessage, Handler: "say", Args: []any{[]any{"a", 127.0}, true, false}},
		{Type: EventSendMessage, Handler: "ping"},
	}}
	if !Equal(m, want) {
		t.Fatalf("decoded\n %#v\nwant\n %#v", m, want)
	}
	if !IsDelete(m.Events[3].Value) {
		t.Error("AMF3 undefined does not delete the slot")
	}
	// The same events in a type-19 message decode the same.
	if m19, err := Decode(payload[1:], false); err != nil || !Equal(m19, want) {
		t.Errorf("type 19: %v", err)
	}
	// Re-encoded for AMF0 and AMF3 peers: AMF0 where it can, AMF3 for the
	// byte array only, and the same message decodes back.
	for _, amf3 := range []bool{true, false} {
		b, err := m.AppendEncode(nil, amf3)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte{0x11, 0x0c}); n != 1 {
			t.Errorf("amf3=%v: %d avmplus byte arrays in % x", amf3, n, b)
		}
		if bytes.Contains(b, []byte{0x11, 0x0a}) || !bytes.Contains(b, []byte{0x00, 0x04, 'f', 'r', 'o', 'm', 0x02}) {
			t.Errorf("amf3=%v: the chat line is not an AMF0 object", amf3)
		}
		got, err := Decode(b, amf3)
		if err != nil {
			t.Fatal(err)
		}
		if !Equal(got, m) {
			t.Errorf("amf3=%v: round trip\n %#v", amf3, got)
		}
	}
}

func TestDecodeAMF3Hostile(t *testing.T) {
	cases := map[string][]byte{
		"cyclic value":       soMsg(1, soEvent(EventRequestChange, soKey("k"), []byte{0x11, 0x09, 0x03, 0x01, 0x09, 0x00})),
		"truncated value":    soMsg(1, soEvent(EventChange, soKey("k"), []byte{0x11, 0x06, 0x09, 'a'})),
		"bad reference":      soMsg(1, soEvent(EventChange, soKey("k"), []byte{0x11, 0x06, 0x00})),
		"handler not string": soMsg(1, soEvent(EventSendMessage, []byte{0x11, 0x04, 0x01})),
		"handler nested":     soMsg(1, soEvent(EventSendMessage, []byte{0x11, 0x09, 0x03, 0x01, 0x01})),
		"handler too long":   soMsg(1, soEvent(EventSendMessage, []byte{0x11, 0x06, 0x90, 0x03}, []byte(strings.Repeat("h", 1025)))),
		"deep":               soMsg(1, soEvent(EventRequestChange, soKey("k"), append([]byte{0x11}, bytes.Repeat([]byte{0x09, 0x03, 0x01}, 40)...), []byte{0x01})),
	}
	for name, b := range cases {
		if _, err := Decode(b, true); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestValueEqualBytes(t *testing.T) {
	if !ValueEqual([]byte{1}, []byte{1}) || ValueEqual([]byte{1}, []byte{2}) || ValueEqual([]byte{}, []any{}) {
		t.Error("byte arrays")
	}
	if !ValueEqual(amf0.ECMAArray{"b": []byte{}}, amf0.ECMAArray{"b": []byte{}}) {
		t.Error("nested byte arrays")
	}
}
