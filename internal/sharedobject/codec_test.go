package sharedobject

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amf0 "github.com/yutopp/go-amf0"
)

// readHex reads a golden file: hex bytes, with '#' comments to end of line.
func readHex(t testing.TB, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

func chat(version uint32, persistent bool, evs ...Event) Message {
	return Message{Name: "chat", Version: version, Persistent: persistent, Events: evs}
}

var golden = map[string]struct {
	m    Message
	amf3 bool
}{
	"use":                {m: chat(0, false, Event{Type: EventUse})},
	"release":            {m: chat(7, true, Event{Type: EventRelease})},
	"request_change":     {m: chat(3, false, Event{Type: EventRequestChange, Key: "msg", Value: "hi"})},
	"change":             {m: chat(4, false, Event{Type: EventChange, Key: "n", Value: 1.5})},
	"success":            {m: chat(5, false, Event{Type: EventSuccess, Key: "msg"})},
	"send_message":       {m: chat(5, false, Event{Type: EventSendMessage, Handler: "say", Args: []any{"yo", true}})},
	"status":             {m: chat(5, false, StatusEvent(StatusNoWriteAccess))},
	"clear":              {m: chat(1, false, Event{Type: EventClear})},
	"remove":             {m: chat(6, false, Event{Type: EventRemove, Key: "msg"})},
	"request_remove":     {m: chat(5, false, Event{Type: EventRequestRemove, Key: "msg"})},
	"amf3_container_use": {m: chat(0, false, Event{Type: EventUse}), amf3: true},
	"use_success": {m: chat(2, true,
		Event{Type: EventUseSuccess}, Event{Type: EventClear},
		Event{Type: EventChange, Key: "a", Value: nil},
		Event{Type: EventChange, Key: "b", Value: false})},
	"values": {m: Message{Name: "v", Version: 9, Events: []Event{
		{Type: EventChange, Key: "u", Value: Undefined{}},
		{Type: EventChange, Key: "s", Value: ""},
		{Type: EventChange, Key: "o", Value: map[string]any{"x": nil}},
		{Type: EventChange, Key: "e", Value: amf0.ECMAArray{"y": 2.0}},
		{Type: EventChange, Key: "l", Value: []any{1.0, "a"}},
		{Type: EventChange, Key: "d", Value: time.UnixMilli(1500).UTC()},
		{Type: EventChange, Key: "t", Value: true},
		{Type: EventChange, Key: "z", Value: nil},
	}}},
}

func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/*.hex")
	if len(files) != len(golden) {
		t.Errorf("%d golden files, %d expectations", len(files), len(golden))
	}
	seen := map[EventType]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".hex")
		g, ok := golden[name]
		if !ok {
			t.Errorf("no expectation for %s", f)
			continue
		}
		wire := readHex(t, f)
		got, err := Decode(wire, g.amf3)
		if err != nil {
			t.Errorf("%s: decode: %v", name, err)
			continue
		}
		if !Equal(got, g.m) {
			t.Errorf("%s: decoded\n %#v\nwant\n %#v", name, got, g.m)
		}
		enc, err := g.m.AppendEncode([]byte{0xee}, g.amf3)
		if err != nil {
			t.Errorf("%s: encode: %v", name, err)
			continue
		}
		if !bytes.Equal(enc[1:], wire) || enc[0] != 0xee {
			t.Errorf("%s: encoded\n %x\nwant\n %x", name, enc[1:], wire)
		}
		for _, e := range got.Events {
			seen[e.Type] = true
		}
	}
	for typ := EventUse; typ <= EventUseSuccess; typ++ {
		if !seen[typ] {
			t.Errorf("no golden vector for %v", typ)
		}
	}
}

func TestDecodeOnly(t *testing.T) {
	m, err := Decode(readHex(t, "testdata/decode_only/change_pairs.hex"), false)
	if err != nil {
		t.Fatal(err)
	}
	want := Message{Name: "v", Version: 1, Events: []Event{
		{Type: EventChange, Key: "a", Value: 3.0},
		{Type: EventChange, Key: "b", Value: []any{nil}},
	}}
	if !Equal(m, want) {
		t.Errorf("got %#v", m)
	}
	m, err = Decode(readHex(t, "testdata/decode_only/status_flags.hex"), false)
	if err != nil {
		t.Fatal(err)
	}
	want = Message{Name: "v", Version: 1, Persistent: true, Events: []Event{
		{Type: EventChange, Key: "e", Value: amf0.ECMAArray{"k": nil}},
	}}
	if !Equal(m, want) {
		t.Errorf("got %#v", m)
	}
}

func TestRoundTripValues(t *testing.T) {
	values := []any{
		0.0, -1.25, math.Inf(1), math.NaN(), "", "ü✓", true, false, nil, Undefined{},
		map[string]any{"a": 1.0, "b": map[string]any{"c": []any{"d", nil, amf0.ECMAArray{"e": false}}}},
		amf0.ECMAArray{"x": amf0.ECMAArray{"y": 1.0}, "z": []any{2.0, []any{}}},
		[]any{}, map[string]any{},
		time.UnixMilli(-1500).UTC(), time.UnixMilli(1_700_000_000_123).UTC(),
	}
	m := Message{Name: "rt", Version: 42, Persistent: true}
	for i, v := range values {
		m.Events = append(m.Events, Event{Type: EventRequestChange, Key: string(rune('a' + i)), Value: v})
	}
	m.Events = append(m.Events,
		Event{Type: EventSendMessage, Handler: "h", Args: values[:9]},
		Event{Type: EventSendMessage, Handler: "none"},
		Event{Type: EventStatus, Code: "c", Level: ""},
	)
	for _, amf3 := range []bool{false, true} {
		b, err := m.AppendEncode(nil, amf3)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b, amf3)
		if err != nil {
			t.Fatal(err)
		}
		if !Equal(got, m) {
			t.Errorf("amf3=%v: round trip\n %#v\nwant\n %#v", amf3, got, m)
		}
	}
}

// go-amf0 v0.1.1 reuses one value across ECMA array properties; the codec's
// reader must not (see readValue).
func TestECMAArrayNested(t *testing.T) {
	b := []byte{0x08, 0, 0, 0, 2,
		0, 1, 'a', 0x0a, 0, 0, 0, 1, 0x05,
		0, 1, 'b', 0x03, 0, 1, 'y', 0x01, 0, 0, 0, 0x09,
		0, 0, 0x09}
	v, err := DecodeValue(b)
	if err != nil {
		t.Fatal(err)
	}
	want := amf0.ECMAArray{"a": []any{nil}, "b": map[string]any{"y": false}}
	if !ValueEqual(v, want) {
		t.Fatalf("got %#v", v)
	}
}

func TestEncodeErrors(t *testing.T) {
	bad := []Message{
		{Name: strings.Repeat("x", 70000)},
		{Name: "\xff"},
		{Name: "a", Events: []Event{{Type: 0}}},
		{Name: "a", Events: []Event{{Type: 12}}},
		{Name: "a", Events: []Event{{Type: EventChange, Key: "k", Value: struct{}{}}}},
		{Name: "a", Events: []Event{{Type: EventChange, Key: "k", Value: []any{Undefined{}}}}},
		{Name: "a", Events: []Event{{Type: EventChange, Key: "k", Value: strings.Repeat("x", 70000)}}},
		{Name: "a", Events: []Event{{Type: EventChange, Key: "k", Value: time.Unix(0, 1)}}},
		{Name: "a", Events: []Event{{Type: EventChange, Key: "k", Value: map[string]any{"": 1.0}}}},
		{Name: "a", Events: []Event{{Type: EventSendMessage, Handler: "h", Args: []any{make(chan int)}}}},
	}
	for i, m := range bad {
		out, err := m.AppendEncode([]byte{1, 2}, false)
		if err == nil {
			t.Errorf("%d: no error", i)
		}
		if !bytes.Equal(out, []byte{1, 2}) {
			t.Errorf("%d: dst changed on error: %x", i, out)
		}
	}
}

func TestDecodeHostile(t *testing.T) {
	head := []byte{0, 1, 'a', 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
	ev := func(typ byte, data ...byte) []byte {
		b := append([]byte{}, head...)
		n := len(data)
		b = append(b, typ, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		return append(b, data...)
	}
	deep := []byte{0, 1, 'k'}
	for i := 0; i < 100; i++ {
		deep = append(deep, 0x0a, 0, 0, 0, 1)
	}
	deep = append(deep, 0x05)
	cases := map[string][]byte{
		"empty":              {},
		"short name":         {0, 5, 'a'},
		"no header":          {0, 1, 'a', 0, 0},
		"bad utf8 name":      append([]byte{0, 1, 0xff}, head[3:]...),
		"event length lies":  append(append([]byte{}, head...), 4, 0xff, 0xff, 0xff, 0xff, 0),
		"truncated event":    append(append([]byte{}, head...), 4, 0),
		"unknown type":       ev(12),
		"type zero":          ev(0),
		"use with data":      ev(1, 1),
		"huge strict array":  ev(3, 0, 1, 'k', 0x0a, 0x7f, 0xff, 0xff, 0xff, 0x05),
		"reference":          ev(3, 0, 1, 'k', 0x07, 0, 1),
		"typed object":       ev(3, 0, 1, 'k', 0x10, 0, 1, 'T', 0, 0, 9),
		"object no end":      ev(3, 0, 1, 'k', 0x03, 0, 1, 'a', 0x05),
		"deep":               ev(3, deep...),
		"nan date":           ev(3, 0, 1, 'k', 0x0b, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0, 0, 0),
		"fraction date":      ev(3, 0, 1, 'k', 0x0b, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0, 0),
		"trailing":           ev(5, 0, 1, 'k', 9),
		"change no value":    ev(4, 0, 1, 'k'),
		"send not string":    ev(6, 0x00, 0, 0, 0, 0, 0, 0, 0, 0),
		"send empty":         ev(6),
		"status short":       ev(7, 0, 1, 'c'),
		"bad utf8 value":     ev(3, 0, 1, 'k', 0x02, 0, 1, 0xff),
		"truncated number":   ev(3, 0, 1, 'k', 0x00, 1, 2),
		"unsupported marker": ev(3, 0, 1, 'k', 0x0d),
	}
	for name, b := range cases {
		if _, err := Decode(b, false); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	amf3 := map[string][]byte{
		// An externalizable class other than the Flex collection wrappers.
		"amf3 externalizable": ev(3, 0, 1, 'k', 0x11, 0x0a, 0x07, 0x03, 'X', 0),
		"amf3 encoding":       append([]byte{3}, ev(1)...),
	}
	for name, b := range amf3 {
		if name == "amf3 externalizable" {
			b = append([]byte{0}, b...)
		}
		if _, err := Decode(b, true); !errors.Is(err, ErrAMF3) {
			t.Errorf("%s: err = %v, want ErrAMF3", name, err)
		}
	}
	if _, err := Decode(nil, true); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty amf3: %v", err)
	}
}

func TestDecodeLimits(t *testing.T) {
	m := Message{Name: "n"}
	for i := 0; i < 20; i++ {
		m.Events = append(m.Events, Event{Type: EventRequestChange, Key: "k", Value: 1.0})
	}
	b, _ := m.AppendEncode(nil, false)
	if _, err := (Limits{MaxEvents: 10}).Decode(b, false); !errors.Is(err, ErrMalformed) {
		t.Errorf("events: %v", err)
	}
	if _, err := (Limits{MaxMessageBytes: len(b) - 1}).Decode(b, false); !errors.Is(err, ErrMalformed) {
		t.Errorf("size: %v", err)
	}
	long := Message{Name: "n", Events: []Event{{Type: EventRemove, Key: strings.Repeat("k", 50)}}}
	b, _ = long.AppendEncode(nil, false)
	if _, err := (Limits{MaxKeyBytes: 49}).Decode(b, false); !errors.Is(err, ErrMalformed) {
		t.Errorf("key: %v", err)
	}
	if _, err := (Limits{MaxKeyBytes: 50}).Decode(b, false); err != nil {
		t.Errorf("key at limit: %v", err)
	}
	// A Change event with many pairs is bounded too.
	pairs := []byte{0, 1, 'n', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0}
	for i := 0; i < 100; i++ {
		pairs = append(pairs, 0, 1, 'k', 0x05)
	}
	pairs[16], pairs[17], pairs[18], pairs[19] = 0, 0, 1, 144 // 400 bytes
	if _, err := (Limits{MaxEvents: 50}).Decode(pairs, false); !errors.Is(err, ErrMalformed) {
		t.Errorf("pairs: %v", err)
	}
	if m, err := Decode(pairs, false); err != nil || len(m.Events) != 100 {
		t.Errorf("pairs: %v %d", err, len(m.Events))
	}
}

func TestStatusEventString(t *testing.T) {
	if EventUseSuccess.String() != "use-success" || EventType(99).String() != "event(99)" {
		t.Error("names")
	}
}
