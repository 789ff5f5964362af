// Package codec reads the codec configurations a stream announces in its
// sequence headers — the AVC decoder configuration record (SPS, PPS, NAL
// unit length size, picture size, RFC 6381 codec string) and the AAC
// AudioSpecificConfig — once, for every part of the data plane: the hub
// (NAL length for classifying frames, picture size for the streams API)
// and the packager (init segments, MPEG-TS, playlists) read the same result.
//
// Parsing is done by mp4ff (AVC) and mediacommon (AAC); this package bounds
// their input, turns their panics on hostile bytes into errors and checks
// what they return.
package codec
