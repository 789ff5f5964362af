// Package config is relaymesh's configuration file: one YAML document whose
// sections match the subcommands' flags. Every field has a documented
// default (see Default and docs/configuration.md); flags given on the
// command line override the file.
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

// Config is the whole file.
type Config struct {
	Log     Log     `yaml:"log"`
	RTMP    RTMP    `yaml:"rtmp"`
	HTTP    HTTP    `yaml:"http"`
	Hub     Hub     `yaml:"hub"`
	Publish Publish `yaml:"publish"`
	Relay   Relay   `yaml:"relay"`
	HLS     HLS     `yaml:"hls"`
	// SharedObjects is read by the primary and by every relay.
	SharedObjects SharedObjects `yaml:"shared_objects"`
	// Play, Hooks and TLS are read by the primary and by every relay; the
	// orchestrator reads play.token_secret and tls (with http.tls_listen).
	Play  Play  `yaml:"play"`
	Hooks Hooks `yaml:"hooks"`
	TLS   TLS   `yaml:"tls"`
	// NATS is the control-plane bus of primaries, relays and orchestrators.
	NATS NATS `yaml:"nats"`
	// Advertise and Capacity are what a primary or relay reports to the
	// orchestrator (with nats.urls).
	Advertise Advertise `yaml:"advertise"`
	Capacity  Capacity  `yaml:"capacity"`
	// Primary names the primary on the control plane.
	Primary Primary `yaml:"primary"`
	// Orchestrator configures relaymesh orchestrator (and the control plane
	// of relaymesh dev).
	Orchestrator Orchestrator `yaml:"orchestrator"`
	// Dev configures relaymesh dev.
	Dev Dev `yaml:"dev"`
}

// Play configures who may play (RTMP, HLS and DASH). Off by default: an
// application not in Protect plays without credentials.
type Play struct {
	// Protect lists the applications whose viewers need a play key or
	// token; "*" is every application (default: none).
	Protect []string `yaml:"protect"`
	// Keys maps "app/name", "app" or "*" to a play key: viewers add ?key=KEY.
	Keys map[string]string `yaml:"keys"`
	// TokenSecret verifies signed play tokens (?token=, issued by the
	// redirector, which needs the same secret); relays also sign their own
	// upstream pulls with it (default: none, tokens refused).
	TokenSecret string `yaml:"token_secret"`
	// PreviousTokenSecrets are still accepted, for rotating the secret.
	PreviousTokenSecrets []string `yaml:"previous_token_secrets"`
}

// Hooks are the operator's HTTP callbacks (POST JSON; 2xx allows).
type Hooks struct {
	OnPublish   string        `yaml:"on_publish"`   // asked before a broadcaster starts (primary)
	OnPlay      string        `yaml:"on_play"`      // asked before a viewer starts (RTMP play, HLS/DASH entry playlist)
	OnUnpublish string        `yaml:"on_unpublish"` // told when a broadcaster stopped
	OnStop      string        `yaml:"on_stop"`      // told when a viewer stopped (HLS/DASH: 30s without a request)
	Timeout     time.Duration `yaml:"timeout"`      // one call (default 3s)
	FailOpen    bool          `yaml:"fail_open"`    // allow when on_publish/on_play cannot answer (default false: refuse)
	Queue       int           `yaml:"queue"`        // on_unpublish/on_stop notices waiting at most, then dropped (default 1024)
}

// TLS is the certificate of the RTMPS and HTTPS listeners, re-read when
// its files change.
type TLS struct {
	Cert string `yaml:"cert"` // PEM certificate chain file
	Key  string `yaml:"key"`  // PEM private key file
}

// NATS says how to reach the bus: an external cluster (URLs), or, for the
// orchestrator, an embedded server.
type NATS struct {
	URLs    string `yaml:"urls"`     // nats://host:4222,… (primary, relay: empty = no control plane; orchestrator: empty = embedded server)
	Creds   string `yaml:"creds"`    // credentials file (JWT and NKey seed)
	NKey    string `yaml:"nkey"`     // NKey seed file
	CA      string `yaml:"ca"`       // CA bundle of the NATS servers' certificates
	Cert    string `yaml:"cert"`     // client certificate (with key)
	Key     string `yaml:"key"`      // client key
	DataDir string `yaml:"data_dir"` // embedded server (orchestrator): JetStream store directory (default: a temporary directory)
	Listen  string `yaml:"listen"`   // embedded server (orchestrator): address other processes connect to (default 127.0.0.1:4222; empty: in-process only)
}

// Advertise is where viewers reach this server, when not at its listen
// addresses (behind NAT, a load balancer or in a container).
type Advertise struct {
	RTMP string `yaml:"rtmp"` // host:port (default: the RTMP listen address)
	HTTP string `yaml:"http"` // host:port (default: the HTTP listen address)
	// RTMPS and HTTPS are reported for viewers asking for TLS (default: the
	// rtmp.tls_listen and http.tls_listen addresses).
	RTMPS string `yaml:"rtmps"`
	HTTPS string `yaml:"https"`
}

// Capacity bounds what the orchestrator sends to this server.
type Capacity struct {
	Viewers int     `yaml:"viewers"` // 0 = unlimited
	Mbps    float64 `yaml:"mbps"`    // Mbit/s sent; 0 = unlimited
}

// Primary is the primary's identity on the control plane.
type Primary struct {
	ID       string `yaml:"id"`       // default primary
	Location string `yaml:"location"` // its location in the graph
}

// Orchestrator configures the orchestrator and its redirector.
type Orchestrator struct {
	ID             string  `yaml:"id"`              // instance id in the leadership lease (default host-pid)
	Graph          string  `yaml:"graph"`           // location graph file (default: the built-in dev world)
	GeoIP          string  `yaml:"geoip"`           // MaxMind City database (default: the built-in demo database)
	TrustedProxies string  `yaml:"trusted_proxies"` // comma-separated addresses/prefixes whose X-Forwarded-For is believed
	TokenSecret    string  `yaml:"token_secret"`    // signs sticky tokens; share between redirectors (default random)
	Threshold      float64 `yaml:"threshold"`       // demand bonus that opens a relay (0 = 50)
	DevIP          bool    `yaml:"dev_ip"`          // honour ?ip=ADDR on /play (development only)
	OverflowURL    string  `yaml:"overflow_url"`    // CDN URL prefix for HLS/DASH viewers when every server is full
	// SteeringTTL is the TTL of content steering answers: how soon HLS/DASH
	// players following steering leave a draining relay (0 = 5s).
	SteeringTTL time.Duration `yaml:"steering_ttl"`
	// DASHSteeringTTL is the TTL of the DASH steering answers: how soon
	// dash.js leaves a dead relay (0 = 2s).
	DASHSteeringTTL time.Duration `yaml:"dash_steering_ttl"`
	// PlayTokenTTL is the lifetime of the play tokens redirects carry (with
	// play.token_secret): a viewer must start playing within it (default 10m).
	PlayTokenTTL time.Duration `yaml:"play_token_ttl"`
	// PlayTokenStep rounds expiries up to a multiple of it, so the viewers
	// of a stream share one token and CDN cache entries (default 1m).
	PlayTokenStep time.Duration `yaml:"play_token_step"`
}

// Dev configures the development mesh (relaymesh dev). Its primary listens
// at rtmp.listen, its redirector and dashboard at http.listen.
type Dev struct {
	PrimaryHTTP   string `yaml:"primary_http"`    // HTTP listener of the primary (default 127.0.0.1:8081)
	RelayBasePort int    `yaml:"relay_base_port"` // relay i listens RTMP on base+2i, HTTP on base+2i+1 (default 1940; 0: free ports)
	DemoSource    bool   `yaml:"demo_source"`     // publish a test pattern to live/demo with ffmpeg
}

// HLS configures the HLS/DASH packager served on the HTTP listener under
// /hls/{app}/{name}/index.m3u8 and /dash/{app}/{name}/manifest.mpd.
type HLS struct {
	// Format is the HLS variant: llhls (low-latency, fMP4, default), fmp4 or mpegts.
	Format string `yaml:"format"`
	// Apps overrides the format per application, e.g. {stb: mpegts}.
	Apps map[string]string `yaml:"apps"`
	// AlwaysOn lists applications packaged from the first request on, even
	// without viewers.
	AlwaysOn []string `yaml:"always_on"`
	// DASHLowLatency lists applications whose DASH manifests are
	// low-latency (chunked CMAF; llhls format only).
	DASHLowLatency []string `yaml:"dash_low_latency"`
	// Linger keeps a stream packaged this long after its last request (default 30s).
	Linger time.Duration `yaml:"linger"`
	// PackageHeld: a relay packages the streams the orchestrator opens on
	// it from the moment it pulls them, not from their first HTTP request,
	// until they are closed there (default true).
	PackageHeld bool `yaml:"package_held"`
	// SegmentMinDuration is the shortest segment (default 1s).
	SegmentMinDuration time.Duration `yaml:"segment_min_duration"`
	// PartTarget is the low-latency part duration (default 200ms).
	PartTarget time.Duration `yaml:"part_target"`
	// PartHoldBack is PART-HOLD-BACK in part targets (default 3, at least
	// 2): how far behind the newest part LL-HLS players start and play.
	PartHoldBack float64 `yaml:"part_hold_back"`
	// SegmentCount is the number of segments in playlists (default 7).
	SegmentCount int `yaml:"segment_count"`
	// SteeringURL is the base URL of the redirector (e.g.
	// http://play.example.net): playlists and manifests then name its
	// content steering service, with this server's id as the pathway.
	// Empty (the default): no steering.
	SteeringURL string `yaml:"steering_url"`
	// EndGrace: a stream without media this long ends visibly (ENDLIST, a
	// static MPD) (default 5s).
	EndGrace time.Duration `yaml:"end_grace"`
	// EndedLinger: an ended stream's playlists are served this long, then
	// 404 (default 10s).
	EndedLinger time.Duration `yaml:"ended_linger"`
	// PublicBaseURL is the scheme://host[:port] players reach this node at,
	// written into DASH manifests (BaseURL, UTCTiming); default: from the
	// request (Host, X-Forwarded-Proto/Host).
	PublicBaseURL string `yaml:"public_base_url"`
}

// Log configures structured logging.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error (default info)
	Format string `yaml:"format"` // text or json (default text)
}

// RTMP configures the RTMP listener and its connections.
type RTMP struct {
	Listen           string        `yaml:"listen"`             // default 127.0.0.1:1935
	HandshakeTimeout time.Duration `yaml:"handshake_timeout"`  // default 10s
	IdleTimeout      time.Duration `yaml:"idle_timeout"`       // a silent publisher or client is closed after this (default 30s)
	WriteTimeout     time.Duration `yaml:"write_timeout"`      // one blocked write longer than this closes the viewer (default 10s)
	MaxMessageSize   uint32        `yaml:"max_message_size"`   // bytes (default 8 MiB)
	ViewerSendBuffer int           `yaml:"viewer_send_buffer"` // SO_SNDBUF of connections, bytes; 0 = kernel auto-tuning (default 131072)
	MaxConnections   int           `yaml:"max_connections"`    // 0 = unlimited (default 0)
	Grace            time.Duration `yaml:"grace"`              // viewers wait this long for a stopped broadcaster (default 30s)
	Drain            time.Duration `yaml:"drain"`              // on SIGTERM, connections get this long to finish (default 5s)
	WriteBatch       time.Duration `yaml:"write_batch"`        // write viewers in rounds this far apart (default 100ms; 0: each frame at once)
	TLSListen        string        `yaml:"tls_listen"`         // RTMPS listen address, with tls.cert/key (default: none)
	WholeRounds      bool          `yaml:"whole_rounds"`       // every connection in whole write_batch rounds, as a relay's link (default false: adaptive)
}

// HTTP configures the HTTP listener (/healthz, /metrics, /api/v1/streams).
type HTTP struct {
	Listen string `yaml:"listen"` // default 127.0.0.1:8080
	Pprof  bool   `yaml:"pprof"`  // serve /debug/pprof/ (default false)
	// TLSListen is an HTTPS listener serving the same as Listen, with
	// tls.cert/key (default: none).
	TLSListen string `yaml:"tls_listen"`
	// AdminListen is a listener of its own for the API that changes state;
	// the public listeners then serve none of it (default: none).
	AdminListen string `yaml:"admin_listen"`
	// AdminToken is the bearer token of the API that changes state (default:
	// none; without it and without AdminListen that API answers loopback
	// clients only).
	AdminToken string `yaml:"admin_token"`
	// PublicStatus keeps read-only status (GET /api/..., /metrics) on the
	// public listeners; false moves it behind the admin token or listener
	// (default true).
	PublicStatus bool `yaml:"public_status"`
}

// Hub configures every stream hub (fan-out, GOP cache, frame dropping).
type Hub struct {
	ViewerQueue       time.Duration `yaml:"viewer_queue"`        // media time a viewer may lag before dropping fully (default 1s)
	ViewerQueueFrames int           `yaml:"viewer_queue_frames"` // default 1024
	SlowViewerTimeout time.Duration `yaml:"slow_viewer_timeout"` // a viewer losing even audio this long is closed (default 10s)
	GOPCacheMaxFrames int           `yaml:"gop_cache_max_frames"`
	GOPCacheMaxBytes  int           `yaml:"gop_cache_max_bytes"`
	// MetricsStreams bounds the streams with their own app/stream labels on
	// the relaymesh_stream_* metrics; the others share stream="_other"
	// (default 100; negative: none).
	MetricsStreams int `yaml:"metrics_streams"`
}

// Publish configures who may publish on the primary.
type Publish struct {
	// Keys maps a stream name, "app/name" or "*" to its publish key:
	// publishers use rtmp://host/APP/NAME?key=SECRET.
	Keys map[string]string `yaml:"keys"`
	// TokenSecret enables HMAC-signed tokens: ?token=EXPIRY.HEXSIG.
	TokenSecret string `yaml:"token_secret"`
	// Open lets anyone publish without a key (dev only; default false).
	Open bool `yaml:"open"`
	// Takeover lets a new publisher replace a live one (default false).
	Takeover bool `yaml:"takeover"`
}

// Relay configures a relay's upstream pulls.
type Relay struct {
	ID       string        `yaml:"id"`
	Location string        `yaml:"location"`
	Upstream string        `yaml:"upstream"` // rtmp://host:port of the primary or a parent relay
	Linger   time.Duration `yaml:"linger"`   // keep a pull this long after its last viewer (default 30s)
	Redirect string        `yaml:"redirect"` // where a draining relay sends its RTMP viewers: a redirector's http(s) URL or an rtmp:// server (default none)
	// UpstreamCA is a PEM file of the CAs an rtmps:// upstream's certificate
	// is checked against (default: the system's roots).
	UpstreamCA string `yaml:"upstream_ca"`
}

// SharedObjects configures RTMP shared objects and calls: the limits each
// client connection is held to and the write rules. The primary and every
// relay should carry the same section: relays apply the rules and the
// per-client limits to their own clients, the primary enforces the object,
// slot and size limits for the whole mesh. A zero number means the default.
type SharedObjects struct {
	ObjectsPerClient int `yaml:"objects_per_client"` // objects one viewer or publisher may use at once (default 64)
	ObjectsPerScope  int `yaml:"objects_per_scope"`  // objects alive in one application scope, primary (default 1024)
	SlotsPerObject   int `yaml:"slots_per_object"`   // slots of one object, primary (default 1024)
	ValueBytes       int `yaml:"value_bytes"`        // encoded AMF0 size of one slot value, primary (default 16384)
	ObjectBytes      int `yaml:"object_bytes"`       // encoded size of all slots of one object, primary (default 1048576)
	// MessagesPerSecond and Burst limit the shared-object messages of one
	// viewer or publisher connection: over the limit it gets one
	// LimitExceeded status and then silence (defaults 50 and 100).
	MessagesPerSecond float64 `yaml:"messages_per_second"`
	Burst             int     `yaml:"burst"`
	// FloodPerSecond and FloodBurst: a client sending more shared-object
	// messages and calls than this is closed (defaults 200 and 400).
	FloodPerSecond float64 `yaml:"flood_per_second"`
	FloodBurst     int     `yaml:"flood_burst"`
	// Rules are the write rules, checked in order; the first whose op,
	// scope, object and key patterns match decides; none matching allows
	// (default: no rules).
	Rules access.Rules `yaml:"rules"`
	// Data is the directory of persistent shared objects of a primary
	// without NATS (default: relaymesh-data in the OS temporary directory).
	Data string `yaml:"data"`
	// Webhooks maps an application (or "*") to the URL that calls of its
	// clients without a Go handler are POSTed to (primary).
	Webhooks map[string]string `yaml:"webhooks"`
	// WebhookTimeout bounds one webhook call (default 5s).
	WebhookTimeout time.Duration `yaml:"webhook_timeout"`
}

// Default is the configuration used when no file and no flags say otherwise.
func Default() Config {
	return Config{
		Log: Log{Level: "info", Format: "text"},
		RTMP: RTMP{
			Listen:           "127.0.0.1:1935",
			HandshakeTimeout: 10 * time.Second,
			IdleTimeout:      30 * time.Second,
			WriteTimeout:     10 * time.Second,
			MaxMessageSize:   8 << 20,
			ViewerSendBuffer: 128 << 10,
			Grace:            30 * time.Second,
			Drain:            5 * time.Second,
			WriteBatch:       100 * time.Millisecond,
		},
		HTTP: HTTP{Listen: "127.0.0.1:8080", PublicStatus: true},
		Hub: Hub{
			ViewerQueue:       time.Second,
			ViewerQueueFrames: 1024,
			SlowViewerTimeout: 10 * time.Second,
			GOPCacheMaxFrames: 2500,
			GOPCacheMaxBytes:  32 << 20,
			MetricsStreams:    100,
		},
		Relay: Relay{Linger: 30 * time.Second},
		HLS:   HLS{Format: "llhls", Linger: 30 * time.Second, PackageHeld: true, SegmentMinDuration: time.Second, PartTarget: 200 * time.Millisecond, PartHoldBack: 3, SegmentCount: 7},
		SharedObjects: SharedObjects{
			ObjectsPerClient: 64, ObjectsPerScope: 1024, SlotsPerObject: 1024,
			ValueBytes: 16 << 10, ObjectBytes: 1 << 20,
			MessagesPerSecond: 50, Burst: 100, FloodPerSecond: 200, FloodBurst: 400,
			Data: filepath.Join(os.TempDir(), "relaymesh-data"), WebhookTimeout: 5 * time.Second,
		},
		NATS:         NATS{Listen: "127.0.0.1:4222"},
		Primary:      Primary{ID: "primary"},
		Orchestrator: Orchestrator{PlayTokenTTL: 10 * time.Minute, PlayTokenStep: time.Minute},
		Dev:          Dev{PrimaryHTTP: "127.0.0.1:8081", RelayBasePort: 1940},
	}
}

// Load reads path over the defaults. Unknown keys are errors, so a typo
// does not silently fall back to a default.
func Load(path string) (Config, error) {
	c := Default()
	err := c.LoadFile(path)
	return c, err
}

// LoadFile reads path over c (a command's defaults); "" reads nothing.
// Errors name the file, the line and the YAML key (rtmp.listen), suggest
// the key meant when one is misspelt, and list every problem of the file.
func (c *Config) LoadFile(path string) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return c.decode(path, b)
}
