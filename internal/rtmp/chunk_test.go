package rtmp

import (
	"bufio"
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func roundTrip(t *testing.T, chunkSize uint32, msgs []Message) []Message {
	t.Helper()
	var buf bytes.Buffer
	w := NewChunkWriter()
	w.SetChunkSize(chunkSize)
	for i := range msgs {
		w.Append(&msgs[i])
	}
	if err := w.Flush(&buf); err != nil {
		t.Fatal(err)
	}
	r := NewChunkReader(bufio.NewReader(&buf), 0)
	if err := r.SetChunkSize(chunkSize); err != nil {
		t.Fatal(err)
	}
	var out []Message
	for range msgs {
		m, err := r.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		out = append(out, m)
	}
	return out
}

func TestChunkRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cs := range []uint32{1, 128, 4096, 65536} {
		var msgs []Message
		for i := 0; i < 50; i++ {
			p := make([]byte, rng.IntN(20000))
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			ts := uint32(i * 40)
			if i > 40 {
				ts = 0xffffff + uint32(i) // extended timestamps
			}
			typ := []uint8{TypeAudio, TypeVideo, TypeDataAMF0, TypeCommandAMF0}[i%4]
			msgs = append(msgs, Message{Type: typ, StreamID: uint32(i % 3), Timestamp: ts, Payload: p})
		}
		got := roundTrip(t, cs, msgs)
		for i := range msgs {
			if got[i].Type != msgs[i].Type || got[i].StreamID != msgs[i].StreamID || got[i].Timestamp != msgs[i].Timestamp || !bytes.Equal(got[i].Payload, msgs[i].Payload) {
				t.Fatalf("chunk size %d message %d: got %v want %v", cs, i, &got[i], &msgs[i])
			}
		}
	}
}

// Headers of type 1, 2 and 3 as other implementations write them.
func TestChunkHeaderTypes(t *testing.T) {
	in := []byte{
		0x04, 0, 0, 100, 0, 0, 2, 8, 1, 0, 0, 0, 0xaa, 0xbb, // type 0: ts 100, len 2, audio, stream 1
		0x44, 0, 0, 20, 0, 0, 1, 9, 0xcc, // type 1: delta 20 -> 120, len 1, video
		0x84, 0, 0, 30, 0xdd, // type 2: delta 30 -> 150, len 1
		0xc4, 0xee, // type 3 starting a message: delta 30 -> 180
	}
	r := NewChunkReader(bufio.NewReader(bytes.NewReader(in)), 0)
	want := []struct {
		typ uint8
		ts  uint32
		b   byte
	}{{8, 100, 0xaa}, {9, 120, 0xcc}, {9, 150, 0xdd}, {9, 180, 0xee}}
	for i, w := range want {
		m, err := r.ReadMessage()
		if err != nil {
			t.Fatal(i, err)
		}
		if m.Type != w.typ || m.Timestamp != w.ts || m.Payload[0] != w.b || m.StreamID != 1 {
			t.Fatalf("%d: %v", i, &m)
		}
	}
}

func TestChunkHostile(t *testing.T) {
	cases := map[string][]byte{
		"type 1 first":     {0x44, 0, 0, 20, 0, 0, 1, 9, 0xcc},
		"too long":         {0x04, 0, 0, 0, 0xff, 0xff, 0xff, 9, 1, 0, 0, 0},
		"truncated header": {0x04, 0, 0},
		"truncated body":   {0x04, 0, 0, 0, 0, 0, 10, 9, 1, 0, 0, 0, 1, 2},
	}
	for name, in := range cases {
		r := NewChunkReader(bufio.NewReader(bytes.NewReader(in)), 1<<20)
		_, err := r.ReadMessage()
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: err = %v, want protocol error", name, err)
		}
	}
	r := NewChunkReader(bufio.NewReader(bytes.NewReader(nil)), 0)
	for _, n := range []uint32{0, 1 << 31} {
		if err := r.SetChunkSize(n); !errors.Is(err, ErrProtocol) {
			t.Errorf("chunk size %d accepted", n)
		}
	}
	// Too many chunk streams.
	var b []byte
	for i := 0; i < maxChunkStreams+2; i++ {
		b = append(b, 0x00, byte(i), 0, 0, 0, 0, 0, 200, 9, 0, 0, 0, 0) // csid 64+i, 200-byte message
		b = append(b, make([]byte, 128)...)                             // only its first chunk
	}
	r = NewChunkReader(bufio.NewReader(bytes.NewReader(b)), 0)
	if _, err := r.ReadMessage(); !errors.Is(err, ErrProtocol) {
		t.Errorf("chunk stream flood: %v", err)
	}
}

func FuzzChunkReader(f *testing.F) {
	var buf bytes.Buffer
	w := NewChunkWriter()
	w.Append(&Message{Type: TypeVideo, StreamID: 1, Timestamp: 0x1000000, Payload: make([]byte, 300)})
	w.Append(&Message{Type: TypeSetChunkSize, Payload: []byte{0, 0, 1, 0}})
	_ = w.Flush(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte{0x04, 0, 0, 100, 0, 0, 2, 8, 1, 0, 0, 0, 0xaa, 0xbb, 0xc4, 0xee})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewChunkReader(bufio.NewReader(bytes.NewReader(in)), 1<<16)
		for i := 0; i < 100; i++ {
			m, err := r.ReadMessage()
			if err != nil {
				return
			}
			if m.Type == TypeSetChunkSize && len(m.Payload) >= 4 {
				_ = r.SetChunkSize(uint32(m.Payload[0])<<24 | uint32(m.Payload[1])<<16 | uint32(m.Payload[2])<<8 | uint32(m.Payload[3]))
			}
		}
	})
}

func FuzzSplitAggregate(f *testing.F) {
	f.Add([]byte{9, 0, 0, 1, 0, 0, 10, 0, 0, 0, 0, 0x17, 0, 0, 0, 12})
	f.Fuzz(func(t *testing.T, p []byte) {
		_ = SplitAggregate(Message{Type: TypeAggregate, Payload: p}, func(Message) {})
	})
}

func FuzzParseCommand(f *testing.F) {
	m, _ := CommandMessage(0, "connect", 1.0, map[string]any{"app": "live"})
	f.Add(m.Payload)
	f.Fuzz(func(t *testing.T, p []byte) {
		_, _ = ParseCommand(Message{Type: TypeCommandAMF0, Payload: p})
		_, _ = ParseCommand(Message{Type: TypeCommandAMF3, Payload: p})
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkChunkWriter appends a batch of shared frames and flushes it:
// the steady state allocates nothing.
func BenchmarkChunkWriter(b *testing.B) {
	w := NewChunkWriter()
	w.SetChunkSize(DefaultChunkSize)
	payload := make([]byte, 11000)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)) * 4)
	for i := 0; i < b.N; i++ {
		for j := 0; j < 4; j++ {
			w.AppendMedia(TypeVideo, 1, uint32(i*40+j), payload)
		}
		_ = w.Flush(discard{})
	}
}
