package packager

import (
	"bytes"
	"fmt"

	"github.com/Eyevinn/mp4ff/mp4"
)

// Every fMP4 file of the packager carries a single track with this id.
const trackID = 1

// videoTimescale is the MP4 timescale of video tracks (90 kHz, as HLS).
const videoTimescale = 90000

// videoInit returns the CMAF init segment of a video track.
func videoInit(vc *videoConfig) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: video init: %v", errCodec, r)
		}
	}()
	init := mp4.CreateEmptyInit()
	trak := init.AddEmptyTrack(videoTimescale, "video", "und")
	if err := trak.SetAVCDescriptor("avc1", vc.sps, vc.pps, true); err != nil {
		return nil, fmt.Errorf("%w: video init: %v", errCodec, err)
	}
	return encodeBox(init)
}

// audioInit returns the CMAF init segment of an AAC track; the
// AudioSpecificConfig is the stream's own, byte for byte.
func audioInit(ac *audioConfig) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: audio init: %v", errCodec, r)
		}
	}()
	init := mp4.CreateEmptyInit()
	trak := init.AddEmptyTrack(uint32(ac.sampleRate), "audio", "und")
	esds := mp4.CreateEsdsBox(ac.asc)
	entry := mp4.CreateAudioSampleEntryBox("mp4a", uint16(ac.channels), 16, uint16(ac.sampleRate), esds)
	trak.Mdia.Minf.Stbl.Stsd.AddChild(entry)
	return encodeBox(init)
}

func encodeBox(init *mp4.InitSegment) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(init.Size()))
	if err := init.Encode(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// fragmenter collects the samples of one track and writes them as one
// moof+mdat fragment.
type fragmenter struct {
	seq     uint32 // moof sequence number, increasing per fragment
	samples []mp4.FullSample
	bytes   int
}

func (f *fragmenter) add(decodeTime uint64, dur uint32, cto int32, sync bool, data []byte) {
	flags := mp4.NonSyncSampleFlags
	if sync {
		flags = mp4.SyncSampleFlags
	}
	f.samples = append(f.samples, mp4.FullSample{
		Sample: mp4.Sample{
			Flags:                 flags,
			Dur:                   dur,
			Size:                  uint32(len(data)),
			CompositionTimeOffset: cto,
		},
		DecodeTime: decodeTime,
		Data:       data,
	})
	f.bytes += len(data)
}

func (f *fragmenter) empty() bool { return len(f.samples) == 0 }

// duration is the sum of the sample durations collected so far.
func (f *fragmenter) duration() uint64 {
	var d uint64
	for i := range f.samples {
		d += uint64(f.samples[i].Dur)
	}
	return d
}

// flush appends the fragment to dst and forgets the samples.
func (f *fragmenter) flush(dst []byte) ([]byte, error) {
	if len(f.samples) == 0 {
		return dst, nil
	}
	f.seq++
	frag, err := mp4.CreateFragment(f.seq, trackID)
	if err != nil {
		return dst, err
	}
	for i := range f.samples {
		frag.AddFullSample(f.samples[i])
	}
	w := appendWriter{dst}
	err = frag.Encode(&w)
	clear(f.samples) // drop references to payloads
	f.samples = f.samples[:0]
	f.bytes = 0
	return w.b, err
}

// appendWriter is an io.Writer appending to a byte slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
