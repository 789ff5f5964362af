package rtmp

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/relaymesh/relaymesh/internal/amf"
)

// Bytes as Flash Player sends them once connected with objectEncoding 3:
// message type 17, format byte 0, AMF0 name and transaction id, then values
// behind the avmplus marker 0x11.

// amf3Str is an inline AMF3 string value (marker, U29 length<<1|1, bytes).
func amf3Str(s string) []byte { return append([]byte{0x06, byte(len(s)<<1 | 1)}, s...) }

// amf3Key is an inline AMF3 member name.
func amf3Key(s string) []byte { return append([]byte{byte(len(s)<<1 | 1)}, s...) }

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestParseCommandAMF3Connect(t *testing.T) {
	obj := join(
		[]byte{0x11, 0x0a, 0x0b, 0x01}, // avmplus; object, inline dynamic traits, anonymous
		amf3Key("app"), amf3Str("live"),
		amf3Key("flashVer"), amf3Str("WIN 32,0,0,465"),
		amf3Key("tcUrl"), amf3Str("rtmp://edge.example/live"),
		amf3Key("fpad"), []byte{0x02},
		amf3Key("capabilities"), []byte{0x04, 0x81, 0x6f}, // integer 239
		amf3Key("objectEncoding"), []byte{0x04, 0x03},
		amf3Key("pageUrl"), []byte{0x00}, // undefined
		[]byte{0x01}, // end of dynamic members
	)
	p := join([]byte{0x00}, amf.MustEncode("connect", 1.0), obj)
	c, err := ParseCommand(Message{Type: TypeCommandAMF3, Payload: p})
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "connect" || c.TransactionID != 1 || len(c.Args) != 0 {
		t.Fatalf("%+v", c)
	}
	want := map[string]any{"app": "live", "flashVer": "WIN 32,0,0,465", "tcUrl": "rtmp://edge.example/live",
		"fpad": false, "capabilities": 239.0, "objectEncoding": 3.0, "pageUrl": nil}
	if !reflect.DeepEqual(c.Object, want) {
		t.Fatalf("object %#v", c.Object)
	}
	// The server reads objectEncoding as a float64.
	if enc, _ := c.Object["objectEncoding"].(float64); enc != 3 {
		t.Errorf("objectEncoding %v", c.Object["objectEncoding"])
	}
}

func TestParseCommandAMF3Call(t *testing.T) {
	// sendChat(null, ["hi", 3, ["a", "a"]], "room") on stream 1; the inner
	// "a" is sent the second time as a string reference.
	arr := join(
		[]byte{0x11, 0x09, 0x07, 0x01}, // avmplus; array, 3 dense elements, no associative part
		amf3Str("hi"),
		[]byte{0x04, 0x03},               // integer 3
		[]byte{0x09, 0x05, 0x01},         // array of 2
		amf3Str("a"), []byte{0x06, 0x02}, // "a", then string reference 1
	)
	assoc := join([]byte{0x11, 0x09, 0x01}, amf3Key("k"), []byte{0x03}, []byte{0x01}) // {k: true} as an associative array
	for _, cmdObj := range [][]byte{{0x05}, {0x11, 0x01}} {                           // null as AMF0 and as AMF3
		p := join([]byte{0x00}, amf.MustEncode("sendChat", 0.0), cmdObj, arr, []byte{0x11}, amf3Str("room"), assoc)
		c, err := ParseCommand(Message{Type: TypeCommandAMF3, StreamID: 1, Payload: p})
		if err != nil {
			t.Fatal(err)
		}
		if c.Name != "sendChat" || c.StreamID != 1 || c.Object != nil || len(c.Args) != 3 {
			t.Fatalf("%+v", c)
		}
		if !reflect.DeepEqual(c.Args[0], []any{"hi", 3.0, []any{"a", "a"}}) {
			t.Errorf("array argument %#v", c.Args[0])
		}
		if c.Arg(1) != "room" {
			t.Errorf("Arg(1) = %q", c.Arg(1))
		}
		if o, ok := amf.Object(c.Args[2]); !ok || o["k"] != true {
			t.Errorf("associative array argument %#v", c.Args[2])
		}
	}
	// The name itself may come as AMF3 too.
	p := join([]byte{0x00, 0x11}, amf3Str("ping"), amf.MustEncode(5.0))
	if c, err := ParseCommand(Message{Type: TypeCommandAMF3, Payload: p}); err != nil || c.Name != "ping" || c.TransactionID != 5 {
		t.Fatalf("%+v %v", c, err)
	}
}

func TestParseCommandAMF3Errors(t *testing.T) {
	head := join([]byte{0x00}, amf.MustEncode("call", 2.0, nil))
	cases := map[string]struct {
		p    []byte
		want error
	}{
		"externalizable": {join(head, []byte{0x11, 0x0a, 0x07}, amf3Key("x.Y"), []byte{0}), amf.ErrAMF3},
		"truncated":      {join(head, []byte{0x11, 0x09, 0x07, 0x01}), amf.ErrMalformed},
		"cyclic":         {join(head, []byte{0x11, 0x09, 0x03, 0x01, 0x09, 0x00}), amf.ErrMalformed},
		"bad reference":  {join(head, []byte{0x11, 0x06, 0x02}), amf.ErrMalformed},
	}
	for name, c := range cases {
		if _, err := ParseCommand(Message{Type: TypeCommandAMF3, Payload: c.p}); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
	}
}

// An answer carrying a value AMF0 cannot hold goes as type 20 with that
// value behind an avmplus marker, and parses back.
func TestCommandMessageAMF3Value(t *testing.T) {
	m, err := CommandMessage(0, "_result", 2.0, nil, map[string]any{"blob": []byte{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != TypeCommandAMF0 || !bytes.Contains(m.Payload, []byte{0x11, 0x0a}) {
		t.Fatalf("type %d payload % x", m.Type, m.Payload)
	}
	c, err := ParseCommand(m)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := amf.Object(c.Args[0]); !bytes.Equal(o["blob"].([]byte), []byte{1, 2, 3}) {
		t.Fatalf("%#v", c.Args)
	}
}
