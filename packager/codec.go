package packager

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/Eyevinn/mp4ff/avc"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/relaymesh/relaymesh/internal/av"
)

// errCodec is wrapped by errors about sequence headers the packager cannot use.
var errCodec = errors.New("packager: unsupported or malformed codec configuration")

// videoConfig is what the packager needs from an AVC sequence header.
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
	if len(payload) < 5+7 || payload[0]&0x0f != av.CodecAVC || payload[1] != 0 {
		return nil, fmt.Errorf("%w: not an AVC sequence header", errCodec)
	}
	rec := payload[5:]
	if rec[0] != 1 {
		return nil, fmt.Errorf("%w: AVC configuration version %d", errCodec, rec[0])
	}
	dcr, err := decodeAVCConf(rec)
	if err != nil {
		return nil, err
	}
	if len(dcr.SPSnalus) == 0 || len(dcr.PPSnalus) == 0 {
		return nil, fmt.Errorf("%w: AVC configuration without SPS or PPS", errCodec)
	}
	for _, n := range append(dcr.SPSnalus[:len(dcr.SPSnalus):len(dcr.SPSnalus)], dcr.PPSnalus...) {
		if len(n) == 0 {
			return nil, fmt.Errorf("%w: empty parameter set", errCodec)
		}
	}
	sps, err := parseSPS(dcr.SPSnalus[0])
	if err != nil {
		return nil, err
	}
	if sps.Width == 0 || sps.Height == 0 || sps.Width > 16384 || sps.Height > 16384 {
		return nil, fmt.Errorf("%w: picture size %dx%d", errCodec, sps.Width, sps.Height)
	}
	return &videoConfig{
		raw:    bytes.Clone(payload),
		sps:    dcr.SPSnalus,
		pps:    dcr.PPSnalus,
		nalLen: int(rec[4]&0x03) + 1,
		width:  int(sps.Width),
		height: int(sps.Height),
		codec:  strings.ToLower(avc.CodecString("avc1", sps)),
	}, nil
}

// decodeAVCConf wraps the library decoder: hostile input must give an error,
// never a panic.
func decodeAVCConf(rec []byte) (dcr avc.DecConfRec, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: AVC configuration: %v", errCodec, r)
		}
	}()
	dcr, err = avc.DecodeAVCDecConfRec(rec)
	if err != nil {
		return dcr, fmt.Errorf("%w: AVC configuration: %v", errCodec, err)
	}
	return dcr, nil
}

func parseSPS(nalu []byte) (sps *avc.SPS, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: SPS: %v", errCodec, r)
		}
	}()
	sps, err = avc.ParseSPSNALUnit(nalu, false)
	if err != nil {
		return nil, fmt.Errorf("%w: SPS: %v", errCodec, err)
	}
	return sps, nil
}

// audioConfig is what the packager needs from an AAC sequence header.
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
	if len(payload) < 3 || payload[0]>>4 != av.CodecAAC || payload[1] != 0 {
		return nil, fmt.Errorf("%w: not an AAC sequence header", errCodec)
	}
	asc := payload[2:]
	var c mpeg4audio.AudioSpecificConfig
	if err := c.Unmarshal(asc); err != nil {
		return nil, fmt.Errorf("%w: AudioSpecificConfig: %v", errCodec, err)
	}
	if c.SampleRate < 8000 || c.SampleRate > 48000 {
		return nil, fmt.Errorf("%w: AAC sample rate %d", errCodec, c.SampleRate)
	}
	ch := int(c.ChannelConfig)
	switch {
	case ch == 7:
		ch = 8
	case ch < 1 || ch > 7:
		return nil, fmt.Errorf("%w: AAC channel configuration %d", errCodec, c.ChannelConfig)
	}
	fl := 1024
	if c.FrameLengthFlag {
		fl = 960
	}
	return &audioConfig{
		raw:        bytes.Clone(payload),
		asc:        bytes.Clone(asc),
		conf:       c,
		sampleRate: c.SampleRate,
		channels:   ch,
		frameLen:   fl,
		codec:      fmt.Sprintf("mp4a.40.%d", int(c.Type)),
	}, nil
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
