package packager

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/codec"
)

// errCodec is wrapped by errors about sequence headers the packager cannot use.
var errCodec = codec.ErrConfig

// videoConfig is what the packager keeps of an AVC sequence header (read by
// internal/codec, as the hub reads it).
type videoConfig struct {
	raw      []byte // the FLV tag body, to notice changes
	sps, pps [][]byte
	nalLen   int // NAL unit length size of the stream's access units
	width    int
	height   int
	codec    string // RFC 6381 codec string, e.g. avc1.64001f
}

// parseVideoConfig reads an RTMP AVC sequence header (FLV video tag body).
func parseVideoConfig(payload []byte) (*videoConfig, error) {
	c, err := codec.ParseAVC(payload)
	if err != nil {
		return nil, err
	}
	return &videoConfig{raw: bytes.Clone(payload), sps: c.SPS, pps: c.PPS, nalLen: c.NALLengthSize,
		width: c.Width, height: c.Height, codec: c.Codec}, nil
}

// audioConfig is what the packager keeps of an AAC sequence header.
type audioConfig struct {
	raw        []byte // the FLV tag body, to notice changes
	asc        []byte // AudioSpecificConfig
	conf       mpeg4audio.AudioSpecificConfig
	sampleRate int
	channels   int
	frameLen   int // samples per access unit (1024, or 960)
	codec      string
}

// parseAudioConfig reads an RTMP AAC sequence header (FLV audio tag body).
func parseAudioConfig(payload []byte) (*audioConfig, error) {
	c, err := codec.ParseAAC(payload)
	if err != nil {
		return nil, err
	}
	return &audioConfig{raw: bytes.Clone(payload), asc: c.ASC, conf: c.Config, sampleRate: c.SampleRate,
		channels: c.Channels, frameLen: c.FrameLen, codec: c.Codec}, nil
}

// splitAVCC appends the NAL units of an AVCC access unit (lengths of nalLen
// bytes) to dst. Malformed input gives an error.
func splitAVCC(dst [][]byte, au []byte, nalLen int) ([][]byte, error) {
	for len(au) > 0 {
		nal, rest, err := av.NextNAL(au, nalLen)
		if err != nil {
			return dst, fmt.Errorf("%w: %v", errCodec, err)
		}
		dst = append(dst, nal)
		au = rest
	}
	return dst, nil
}

// toAVCC4 rewrites an access unit to 4-byte NAL lengths (what the MP4 sample
// entry declares). Streams with 4-byte lengths, nearly all, keep their bytes.
func toAVCC4(au []byte, nalLen int) ([]byte, error) {
	if nalLen == 4 {
		return au, nil
	}
	nalus, err := splitAVCC(nil, au, nalLen)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(au)+len(nalus)*4)
	for _, n := range nalus {
		out = binary.BigEndian.AppendUint32(out, uint32(len(n)))
		out = append(out, n...)
	}
	return out, nil
}
