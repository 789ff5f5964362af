package av

import "encoding/binary"

// FLV video frame types (upper nibble of the first byte of a video tag).
const (
	flvFrameKey        = 1
	flvFrameInter      = 2
	flvFrameDisposable = 3 // "disposable inter frame" (H.263 only by the spec, some encoders use it for AVC)
	flvFrameGenerated  = 4
	flvFrameInfo       = 5 // video info/command frame
)

func classifyVideo(f *Frame, nalLenSize int) {
	p := f.Payload
	if len(p) < 1 {
		return
	}
	frameType := p[0] >> 4
	f.Codec = p[0] & 0x0f
	f.Keyframe = frameType == flvFrameKey || frameType == flvFrameGenerated
	f.Disposable = frameType == flvFrameDisposable
	if frameType == flvFrameInfo {
		// Command frames carry no picture: never a dependency of anything.
		f.Disposable = true
	}
	if f.Codec != CodecAVC || len(p) < 5 {
		return
	}
	switch p[1] { // AVCPacketType
	case 0:
		f.SeqHeader = true
		f.Keyframe = false
		f.Disposable = false
	case 1:
		cts := int32(uint32(p[2])<<16|uint32(p[3])<<8|uint32(p[4])) << 8 >> 8 // sign-extend 24 bits
		f.CTS = cts
		if !f.Keyframe && !f.Disposable && nonReferenceAVC(p[5:], nalLenSize) {
			f.Disposable = true
		}
	case 2: // end of sequence
		f.Disposable = true
	}
}

// nonReferenceAVC reports whether every VCL NAL unit (slice) in an AVCC
// access unit has nal_ref_idc == 0, i.e. no other picture can reference it.
// Malformed input reports false (treated as a reference frame: the safe side).
func nonReferenceAVC(au []byte, nalLenSize int) bool {
	if nalLenSize != 1 && nalLenSize != 2 && nalLenSize != 4 {
		nalLenSize = 4
	}
	slices := 0
	for len(au) > 0 {
		nal, rest, err := NextNAL(au, nalLenSize)
		if err != nil {
			return false
		}
		hdr := nal[0]
		typ := hdr & 0x1f
		if typ >= 1 && typ <= 5 { // coded slice
			if hdr&0x60 != 0 {
				return false
			}
			slices++
		}
		au = rest
	}
	return slices > 0
}

func classifyAudio(f *Frame) {
	p := f.Payload
	if len(p) < 1 {
		return
	}
	f.Codec = p[0] >> 4
	if f.Codec == CodecAAC && len(p) >= 2 && p[1] == 0 {
		f.SeqHeader = true
	}
}

// isMetadata reports whether an AMF0 data message is onMetaData, directly or
// wrapped as @setDataFrame("onMetaData", …).
func isMetadata(p []byte) bool {
	name, rest, ok := amf0String(p)
	if !ok {
		return false
	}
	if name == "@setDataFrame" {
		name, _, ok = amf0String(rest)
		if !ok {
			return false
		}
	}
	return name == "onMetaData"
}

// DataName returns the handler name of an AMF0 data message ("onMetaData",
// "onTextData", "@setDataFrame", …) or "" when it does not start with a string.
func DataName(p []byte) string {
	name, _, _ := amf0String(p)
	return name
}

// amf0String reads an AMF0 string marker (0x02, u16 length, bytes).
func amf0String(p []byte) (string, []byte, bool) {
	if len(p) < 3 || p[0] != 0x02 {
		return "", nil, false
	}
	n := int(binary.BigEndian.Uint16(p[1:3]))
	if len(p) < 3+n {
		return "", nil, false
	}
	return string(p[3 : 3+n]), p[3+n:], true
}

// StripSetDataFrame turns @setDataFrame("onMetaData", obj) into
// onMetaData(obj), the form players receive. Other payloads are returned as is.
func StripSetDataFrame(p []byte) []byte {
	name, rest, ok := amf0String(p)
	if !ok || name != "@setDataFrame" {
		return p
	}
	if _, _, ok := amf0String(rest); !ok {
		return p
	}
	return rest
}
