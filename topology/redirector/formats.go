package redirector

import "strings"

// tsPlayers are User-Agent tokens of players whose fMP4 HLS does not
// follow a stream across a new init segment (EXT-X-MAP after
// EXT-X-DISCONTINUITY, written when the publisher reconnects or its codec
// parameters change), where their MPEG-TS HLS does, the codec
// parameters being in band there:
//   - VLC 3 ("VLC/3.0.x LibVLC/3.0.x") keeps a playlist's first EXT-X-MAP
//     only and restarts its MP4 demuxer at a discontinuity without an init
//     segment: playback ends at the publisher's first reconnection. It
//     also plays the separate audio rendition of the fMP4 ladder for its
//     first seconds only.
//   - libavformat ("Lavf/…": ffmpeg, ffplay; "libmpv": mpv) skips a second
//     init segment's moov and decodes the new publisher's pictures with
//     the first one's parameter sets: corrupt pictures after a change of
//     resolution.
var tsPlayers = []string{"VLC/", "LibVLC/", "Lavf/", "libmpv"}

// prefersTS reports whether the player that sent User-Agent ua is
// answered /play?proto=hls with the MPEG-TS playlist when it did not ask
// for a format (format=fmp4 gets it the fMP4 ladder all the same).
func prefersTS(ua string) bool {
	for _, t := range tsPlayers {
		if strings.Contains(ua, t) {
			return true
		}
	}
	return false
}
