package hub

import (
	"strconv"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/codec"
)

// streamParams describe the current session's media for Info.
type streamParams struct {
	videoCodec, audioCodec string
	width, height          int // from the SPS
	metaWidth, metaHeight  int // from onMetaData, used when the SPS says nothing
}

// observe updates the parameters from a frame the publisher wrote (and the
// AVC configuration read from it, when it is a valid AVC sequence header).
func (p *streamParams) observe(f *av.Frame, avc *codec.AVC) {
	switch f.Kind {
	case av.KindVideo:
		if len(f.Payload) > 0 && (p.videoCodec == "" || f.SeqHeader) {
			p.videoCodec = videoCodecName(f.Codec)
		}
		if avc != nil {
			p.width, p.height = avc.Width, avc.Height
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
