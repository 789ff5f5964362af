package hub

import (
	"encoding/binary"
	"strconv"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"

	"github.com/relaymesh/relaymesh/internal/av"
)

// streamParams describe the current session's media for Info.
type streamParams struct {
	videoCodec, audioCodec string
	width, height          int // from the SPS
	metaWidth, metaHeight  int // from onMetaData, used when the SPS says nothing
}

// observe updates the parameters from a frame the publisher wrote.
func (p *streamParams) observe(f *av.Frame) {
	switch f.Kind {
	case av.KindVideo:
		if len(f.Payload) > 0 && (p.videoCodec == "" || f.SeqHeader) {
			p.videoCodec = videoCodecName(f.Codec)
		}
		if f.SeqHeader && f.Codec == av.CodecAVC {
			if w, h, ok := avcVideoSize(f.Payload); ok {
				p.width, p.height = w, h
			}
		}
	case av.KindAudio:
		if len(f.Payload) > 0 && (p.audioCodec == "" || f.SeqHeader) {
			p.audioCodec = audioCodecName(f.Codec)
		}
	case av.KindData:
		if f.Metadata {
			if w, h, ok := metadataVideoSize(f.Payload); ok {
				p.metaWidth, p.metaHeight = w, h
			}
		}
	}
}

func (p *streamParams) size() (int, int) {
	if p.width > 0 && p.height > 0 {
		return p.width, p.height
	}
	return p.metaWidth, p.metaHeight
}

func videoCodecName(id uint8) string {
	switch id {
	case 2:
		return "h263"
	case 3:
		return "screen"
	case 4:
		return "vp6"
	case 5:
		return "vp6a"
	case 6:
		return "screen2"
	case av.CodecAVC:
		return "h264"
	case av.CodecHEVC:
		return "hevc"
	}
	return "flv-video-" + strconv.Itoa(int(id))
}

func audioCodecName(id uint8) string {
	switch id {
	case 0, 3:
		return "pcm"
	case 1:
		return "adpcm"
	case av.CodecMP3, 14:
		return "mp3"
	case 4, 5, 6:
		return "nellymoser"
	case 7:
		return "g711a"
	case 8:
		return "g711u"
	case av.CodecAAC:
		return "aac"
	case 11:
		return "speex"
	}
	return "flv-audio-" + strconv.Itoa(int(id))
}

// avcVideoSize reads the picture size from the first SPS of an AVC sequence
// header (FLV video tag body: 5-byte header, then an
// AVCDecoderConfigurationRecord).
func avcVideoSize(payload []byte) (w, h int, ok bool) {
	sps := firstSPS(payload)
	if sps == nil {
		return 0, 0, false
	}
	var s h264.SPS
	if err := unmarshalSPS(&s, sps); err != nil {
		return 0, 0, false
	}
	w, h = s.Width(), s.Height()
	if w <= 0 || h <= 0 || w > 1<<16 || h > 1<<16 {
		return 0, 0, false
	}
	return w, h, true
}

// unmarshalSPS guards the hub against a decoder panic on a hostile SPS.
func unmarshalSPS(s *h264.SPS, b []byte) (err error) {
	defer func() {
		if recover() != nil {
			err = errBadSPS
		}
	}()
	return s.Unmarshal(b)
}

// firstSPS returns the first SPS NAL unit of an AVC sequence header, or nil.
func firstSPS(payload []byte) []byte {
	if len(payload) < 5+6 || payload[1] != 0 {
		return nil
	}
	rec := payload[5:]
	if rec[0] != 1 || rec[5]&0x1f == 0 || len(rec) < 8 {
		return nil
	}
	n := int(binary.BigEndian.Uint16(rec[6:8]))
	if n == 0 || 8+n > len(rec) {
		return nil
	}
	return rec[8 : 8+n]
}
