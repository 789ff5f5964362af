package packager

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// HLSFormat selects the container and flavour of HLS for an app.
type HLSFormat string

// HLS formats.
const (
	// HLSLowLatency is fMP4 (CMAF) with low-latency parts, blocking playlist
	// reloads and preload hints on the full and audio playlists. The default.
	HLSLowLatency HLSFormat = "llhls"
	// HLSFMP4 is fMP4 (CMAF) segments without parts.
	HLSFMP4 HLSFormat = "fmp4"
	// HLSMPEGTS is MPEG-TS segments with audio muxed into every video
	// rendition, for old set-top boxes.
	HLSMPEGTS HLSFormat = "mpegts"
)

// AppConfig is the per-app configuration.
type AppConfig struct {
	// HLS is the HLS format of the app's streams (default HLSLowLatency).
	HLS HLSFormat
	// AlwaysOn packages the app's streams from the first request on, even
	// when nobody watches any more (the linger never expires).
	AlwaysOn bool
	// LowLatencyDASH makes the app's DASH manifests low-latency (chunked
	// CMAF, availabilityTimeOffset, the segment in progress listed, a
	// latency target of 1.5 s); it needs the llhls format, whose parts are
	// the chunks. Off by default: dash.js plays ~2 s behind instead of
	// ~13 s, but on a link that drops fivefold it stalls for ~12 s before
	// it moves down (docs/hls-dash.md).
	LowLatencyDASH bool
}

// Config configures a Packager. The zero value of every field means its
// documented default.
type Config struct {
	// Logger receives the packager's logs (default: slog.Default()).
	Logger *slog.Logger
	// Registerer receives the packager's Prometheus metrics (default: none,
	// the metrics are kept but not exported).
	Registerer prometheus.Registerer

	// Apps holds per-app settings; apps not listed use Default.
	Apps map[string]AppConfig
	// Default applies to apps not listed in Apps.
	Default AppConfig

	// Linger keeps a stream packaged this long after its last HTTP request
	// (default 30s).
	Linger time.Duration
	// EndGrace is how long a stream may go without media (its publisher
	// left, the upstream was lost, the frames stopped) before the packager
	// ends it visibly: the media playlists get EXT-X-ENDLIST and the DASH
	// manifest becomes static (default 5s). A publisher back within it
	// goes on in the same playlists.
	EndGrace time.Duration
	// EndedLinger is how long an ended stream keeps answering with its
	// ended playlists and manifest (so players reloading them see the end)
	// before its URLs answer 404 (default 10s).
	EndedLinger time.Duration
	// SegmentMinDuration is the shortest segment; segments start at the
	// first keyframe after it (default 1s).
	SegmentMinDuration time.Duration
	// PartTarget is the low-latency HLS part duration; parts end on the first
	// frame boundary at or after it (default 200ms, at least one frame).
	PartTarget time.Duration
	// PartHoldBack is the low-latency playlists' PART-HOLD-BACK in part
	// targets: how far behind the newest part a player starts and plays.
	// At least 2, the specification's floor; default 3, what it says the
	// hold-back SHOULD be at least (fewer stalls at the edge; 2 takes a
	// part target off every player's latency).
	PartHoldBack float64
	// SegmentCount is the number of complete segments listed in playlists
	// and manifests (default 7, the low-latency HLS minimum).
	SegmentCount int
	// MaxSegmentBytes bounds one segment of one rendition; a stream that
	// exceeds it gets its segment cut at the next keyframe regardless and
	// the oversized data is dropped (default 32 MiB).
	MaxSegmentBytes int
	// MaxWait bounds how long a request waits for a playlist update, part or
	// segment that does not exist yet (default 3 × SegmentMinDuration, at
	// least 3s).
	MaxWait time.Duration
	// WriteTimeout bounds the writing of one response (or of each chunk of a
	// segment that is still being written) to a client (default 10s).
	WriteTimeout time.Duration
	// ViewerWindow is how long a client counts as a viewer after its last
	// request (default 30s).
	ViewerWindow time.Duration
	// AudienceWindow is how long a client counts in the audience reported
	// to the control plane (Packager.Audience) after its last request: a few
	// playlist reloads (default 6s).
	AudienceWindow time.Duration
	// MaxViewersTracked bounds the viewer table of one stream (default 100000);
	// beyond it new clients are served but not counted.
	MaxViewersTracked int
	// DASHStartAtOnce serves the first MPD of a young stream as soon as it
	// has a complete segment. By default that request waits (at most two
	// MaxWait) until the stream's segments cover the
	// suggestedPresentationDelay the MPD asks for: a player given less
	// starts at the live edge and stalls for every next segment.
	DASHStartAtOnce bool
	// PublicBaseURL, when set (e.g. "https://relay.example.net"), is the base
	// of the time URL written into DASH manifests; by default it is derived
	// from the request.
	PublicBaseURL string
	// Steering, when set, gives the content steering of a stream (nil for
	// none): steering.go writes it into the multivariant playlist and MPD.
	Steering func(app, name string) *Steering
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Default.HLS == "" {
		c.Default.HLS = HLSLowLatency
	}
	if c.Linger <= 0 {
		c.Linger = 30 * time.Second
	}
	if c.EndGrace <= 0 {
		c.EndGrace = 5 * time.Second
	}
	if c.EndedLinger <= 0 {
		c.EndedLinger = 10 * time.Second
	}
	if c.SegmentMinDuration <= 0 {
		c.SegmentMinDuration = time.Second
	}
	if c.PartTarget <= 0 {
		c.PartTarget = 200 * time.Millisecond
	}
	if c.PartHoldBack <= 0 {
		c.PartHoldBack = 3
	}
	c.PartHoldBack = max(c.PartHoldBack, 2)
	if c.SegmentCount <= 0 {
		c.SegmentCount = 7
	}
	if c.MaxSegmentBytes <= 0 {
		c.MaxSegmentBytes = 32 << 20
	}
	if c.MaxWait <= 0 {
		c.MaxWait = max(3*c.SegmentMinDuration, 3*time.Second)
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.ViewerWindow <= 0 {
		c.ViewerWindow = 30 * time.Second
	}
	if c.AudienceWindow <= 0 {
		c.AudienceWindow = 6 * time.Second
	}
	if c.MaxViewersTracked <= 0 {
		c.MaxViewersTracked = 100000
	}
	return c
}

func (c Config) validate() error {
	check := func(app string, a AppConfig) error {
		switch a.HLS {
		case "", HLSLowLatency, HLSFMP4, HLSMPEGTS:
			return nil
		}
		return fmt.Errorf("packager: app %q: unknown HLS format %q (want llhls, fmp4 or mpegts)", app, a.HLS)
	}
	if err := check("(default)", c.Default); err != nil {
		return err
	}
	for app, a := range c.Apps {
		if err := check(app, a); err != nil {
			return err
		}
	}
	return nil
}

// app returns the settings of an app.
func (c Config) app(name string) AppConfig {
	a, ok := c.Apps[name]
	if !ok {
		return c.Default
	}
	if a.HLS == "" {
		a.HLS = c.Default.HLS
	}
	return a
}
