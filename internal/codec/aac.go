package codec

import (
	"bytes"
	"fmt"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"

	"github.com/relaymesh/relaymesh/internal/av"
)

// AAC is what an AAC sequence header says.
type AAC struct {
	ASC        []byte // the AudioSpecificConfig, a copy
	Config     mpeg4audio.AudioSpecificConfig
	SampleRate int
	Channels   int
	FrameLen   int    // samples per access unit: 1024, or 960
	Codec      string // RFC 6381 codec string, e.g. mp4a.40.2
}

// ParseAAC reads an RTMP AAC sequence header (an FLV audio tag body: the
// 2-byte audio header, then an AudioSpecificConfig).
func ParseAAC(payload []byte) (*AAC, error) {
	if len(payload) < 3 || payload[0]>>4 != av.CodecAAC || payload[1] != 0 {
		return nil, fmt.Errorf("%w: not an AAC sequence header", ErrConfig)
	}
	asc := payload[2:]
	var c mpeg4audio.AudioSpecificConfig
	if err := unmarshalASC(&c, asc); err != nil {
		return nil, fmt.Errorf("%w: AudioSpecificConfig: %v", ErrConfig, err)
	}
	if c.SampleRate < 8000 || c.SampleRate > 48000 {
		return nil, fmt.Errorf("%w: AAC sample rate %d", ErrConfig, c.SampleRate)
	}
	ch := int(c.ChannelConfig)
	switch {
	case ch == 7:
		ch = 8
	case ch < 1 || ch > 7:
		return nil, fmt.Errorf("%w: AAC channel configuration %d", ErrConfig, c.ChannelConfig)
	}
	fl := 1024
	if c.FrameLengthFlag {
		fl = 960
	}
	return &AAC{
		ASC:        bytes.Clone(asc),
		Config:     c,
		SampleRate: c.SampleRate,
		Channels:   ch,
		FrameLen:   fl,
		Codec:      fmt.Sprintf("mp4a.40.%d", int(c.Type)),
	}, nil
}

func unmarshalASC(c *mpeg4audio.AudioSpecificConfig, b []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	return c.Unmarshal(b)
}
