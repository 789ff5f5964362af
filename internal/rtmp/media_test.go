package rtmp

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/relaymesh/relaymesh/internal/amf"
	"github.com/relaymesh/relaymesh/internal/av"
)

type frameLog []struct {
	kind    av.Kind
	ts      uint32
	payload []byte
}

func (l *frameLog) Write(kind av.Kind, ts uint32, p []byte) {
	*l = append(*l, struct {
		kind    av.Kind
		ts      uint32
		payload []byte
	}{kind, ts, p})
}

// flvTag is one tag of an aggregate message: header, body, back pointer.
func flvTag(typ uint8, ts uint32, body []byte) []byte {
	h := make([]byte, 11, 11+len(body)+4)
	h[0] = typ
	h[1], h[2], h[3] = byte(len(body)>>16), byte(len(body)>>8), byte(len(body))
	h[4], h[5], h[6], h[7] = byte(ts>>16), byte(ts>>8), byte(ts), byte(ts>>24)
	h = append(h, body...)
	return binary.BigEndian.AppendUint32(h, uint32(11+len(body)))
}

func TestEachFrame(t *testing.T) {
	meta, err := amf.Encode("onMetaData", map[string]any{"width": 640.0})
	if err != nil {
		t.Fatal(err)
	}
	setData, err := amf.Encode("@setDataFrame", "onMetaData", map[string]any{"width": 640.0})
	if err != nil {
		t.Fatal(err)
	}
	video := []byte{0x17, 1, 0, 0, 0, 0xaa}
	audio := []byte{0xaf, 1, 0xbb}
	agg := append(flvTag(TypeVideo, 1000, video), flvTag(TypeAudio, 1023, audio)...)
	agg = append(agg, flvTag(TypeCommandAMF0, 1030, []byte{2})...) // not media: skipped

	for _, tc := range []struct {
		name  string
		m     Message
		media bool
		want  []av.Kind
		ts    []uint32
		body  [][]byte
	}{
		{"audio", Message{Type: TypeAudio, Timestamp: 5, Payload: audio}, true, []av.Kind{av.KindAudio}, []uint32{5}, [][]byte{audio}},
		{"video", Message{Type: TypeVideo, Timestamp: 6, Payload: video}, true, []av.Kind{av.KindVideo}, []uint32{6}, [][]byte{video}},
		{"data AMF0", Message{Type: TypeDataAMF0, Payload: meta}, true, []av.Kind{av.KindData}, []uint32{0}, [][]byte{meta}},
		{"@setDataFrame unwrapped", Message{Type: TypeDataAMF0, Payload: setData}, true, []av.Kind{av.KindData}, []uint32{0}, [][]byte{meta}},
		{"data AMF3 without its format byte", Message{Type: TypeDataAMF3, Payload: append([]byte{0}, meta...)}, true, []av.Kind{av.KindData}, []uint32{0}, [][]byte{meta}},
		{"empty AMF3 data", Message{Type: TypeDataAMF3, Payload: []byte{0}}, true, nil, nil, nil},
		{"aggregate, rebased on the message's timestamp", Message{Type: TypeAggregate, Timestamp: 50, Payload: agg}, true,
			[]av.Kind{av.KindVideo, av.KindAudio}, []uint32{50, 73}, [][]byte{video, audio}},
		{"command", Message{Type: TypeCommandAMF0, Payload: []byte{2}}, false, nil, nil, nil},
		{"shared object", Message{Type: TypeSharedObjectAMF0}, false, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got frameLog
			media, err := EachFrame(tc.m, &got)
			if err != nil || media != tc.media || len(got) != len(tc.want) {
				t.Fatalf("EachFrame = %v, %v with %d frames; want %v with %d", media, err, len(got), tc.media, len(tc.want))
			}
			for i, f := range got {
				if f.kind != tc.want[i] || f.ts != tc.ts[i] || !bytes.Equal(f.payload, tc.body[i]) {
					t.Errorf("frame %d: %v at %d %x; want %v at %d %x", i, f.kind, f.ts, f.payload, tc.want[i], tc.ts[i], tc.body[i])
				}
			}
		})
	}
	var got frameLog
	if media, err := EachFrame(Message{Type: TypeAggregate, Payload: agg[:len(agg)-3]}, &got); !media || err == nil || len(got) != 2 {
		t.Errorf("truncated aggregate: %v, %v, %d frames; want the two whole frames and an error", media, err, len(got))
	}
}
