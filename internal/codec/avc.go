package codec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/Eyevinn/mp4ff/avc"

	"github.com/relaymesh/relaymesh/internal/av"
)

// ErrConfig is wrapped by every error about a configuration that cannot be
// used: not a sequence header, malformed, or out of bounds.
var ErrConfig = errors.New("unsupported or malformed codec configuration")

// MaxPictureSide bounds the width and height an SPS may declare.
const MaxPictureSide = 16384

// AVC is what an AVC sequence header says.
type AVC struct {
	SPS, PPS      [][]byte // parameter sets, in the record's order
	NALLengthSize int      // bytes of each NAL unit length in the stream's access units (1, 2 or 4)
	Width, Height int      // picture size after cropping, from the first SPS
	Codec         string   // RFC 6381 codec string, e.g. avc1.64001f
}

// ParseAVC reads an RTMP AVC sequence header (an FLV video tag body: the
// 5-byte video header, then an AVCDecoderConfigurationRecord).
func ParseAVC(payload []byte) (*AVC, error) {
	if len(payload) < 5+7 || payload[0]&0x0f != av.CodecAVC || payload[1] != 0 {
		return nil, fmt.Errorf("%w: not an AVC sequence header", ErrConfig)
	}
	rec := payload[5:]
	if rec[0] != 1 {
		return nil, fmt.Errorf("%w: AVC configuration version %d", ErrConfig, rec[0])
	}
	dcr, err := decodeAVCConf(rec)
	if err != nil {
		return nil, err
	}
	if len(dcr.SPSnalus) == 0 || len(dcr.PPSnalus) == 0 {
		return nil, fmt.Errorf("%w: AVC configuration without SPS or PPS", ErrConfig)
	}
	for _, n := range append(dcr.SPSnalus[:len(dcr.SPSnalus):len(dcr.SPSnalus)], dcr.PPSnalus...) {
		if len(n) == 0 {
			return nil, fmt.Errorf("%w: empty parameter set", ErrConfig)
		}
	}
	sps, err := parseSPS(dcr.SPSnalus[0])
	if err != nil {
		return nil, err
	}
	if sps.Width == 0 || sps.Height == 0 || sps.Width > MaxPictureSide || sps.Height > MaxPictureSide {
		return nil, fmt.Errorf("%w: picture size %dx%d", ErrConfig, sps.Width, sps.Height)
	}
	return &AVC{
		SPS:           dcr.SPSnalus,
		PPS:           dcr.PPSnalus,
		NALLengthSize: int(rec[4]&0x03) + 1,
		Width:         int(sps.Width),
		Height:        int(sps.Height),
		Codec:         strings.ToLower(avc.CodecString("avc1", sps)),
	}, nil
}

// decodeAVCConf wraps the library decoder: hostile input gives an error,
// never a panic.
func decodeAVCConf(rec []byte) (dcr avc.DecConfRec, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: AVC configuration: %v", ErrConfig, r)
		}
	}()
	dcr, err = avc.DecodeAVCDecConfRec(rec)
	if err != nil {
		return dcr, fmt.Errorf("%w: AVC configuration: %v", ErrConfig, err)
	}
	return dcr, nil
}

func parseSPS(nalu []byte) (sps *avc.SPS, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: SPS: %v", ErrConfig, r)
		}
	}()
	sps, err = avc.ParseSPSNALUnit(nalu, false)
	if err != nil {
		return nil, fmt.Errorf("%w: SPS: %v", ErrConfig, err)
	}
	return sps, nil
}
