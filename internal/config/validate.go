package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"
)

// HLSFormats are the values of hls.format and hls.apps.
var HLSFormats = []string{"llhls", "fmp4", "mpegts"}

// Validate checks the values a process needs before it listens: every
// problem is reported at once, by YAML key and the flag that sets it.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, flag, format string, args ...any) {
		name := key
		if flag != "" {
			name += " (--" + flag + ")"
		}
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "log-level", "%q: want debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "", "text", "json":
	default:
		bad("log.format", "log-format", "%q: want text or json", c.Log.Format)
	}
	hlsFormat := func(f string) bool {
		for _, h := range HLSFormats {
			if f == h {
				return true
			}
		}
		return f == ""
	}
	if !hlsFormat(c.HLS.Format) {
		bad("hls.format", "", "%q: want %s (DASH is always served beside HLS, under /dash/)", c.HLS.Format, strings.Join(HLSFormats, ", "))
	}
	apps := make([]string, 0, len(c.HLS.Apps))
	for app := range c.HLS.Apps {
		apps = append(apps, app)
	}
	sort.Strings(apps)
	for _, app := range apps {
		if f := c.HLS.Apps[app]; !hlsFormat(f) {
			bad("hls.apps."+app, "", "%q: want %s", f, strings.Join(HLSFormats, ", "))
		}
	}
	for _, a := range []struct {
		key, flag, addr string
		optional        bool
	}{
		{"rtmp.listen", "rtmp", c.RTMP.Listen, false},
		{"http.listen", "http", c.HTTP.Listen, false},
		{"dev.primary_http", "primary-http", c.Dev.PrimaryHTTP, false},
		{"advertise.rtmp", "advertise-rtmp", c.Advertise.RTMP, true},
		{"advertise.http", "advertise-http", c.Advertise.HTTP, true},
		{"advertise.rtmps", "advertise-rtmps", c.Advertise.RTMPS, true},
		{"advertise.https", "advertise-https", c.Advertise.HTTPS, true},
		{"rtmp.tls_listen", "rtmps", c.RTMP.TLSListen, true},
		{"http.tls_listen", "https", c.HTTP.TLSListen, true},
		{"http.admin_listen", "admin-http", c.HTTP.AdminListen, true},
	} {
		if a.addr == "" && a.optional {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			bad(a.key, a.flag, "%q: want HOST:PORT, e.g. 127.0.0.1:1935 or :1935", a.addr)
		}
	}
	if u := c.Relay.Upstream; u != "" {
		if err := checkUpstream(u); err != nil {
			bad("relay.upstream", "upstream", "%q: %v", u, err)
		}
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"rtmp.handshake_timeout", c.RTMP.HandshakeTimeout}, {"rtmp.idle_timeout", c.RTMP.IdleTimeout},
		{"rtmp.write_timeout", c.RTMP.WriteTimeout}, {"rtmp.grace", c.RTMP.Grace}, {"rtmp.drain", c.RTMP.Drain},
		{"rtmp.write_batch", c.RTMP.WriteBatch}, {"hub.viewer_queue", c.Hub.ViewerQueue},
		{"hub.slow_viewer_timeout", c.Hub.SlowViewerTimeout}, {"relay.linger", c.Relay.Linger},
		{"hls.linger", c.HLS.Linger}, {"hls.segment_min_duration", c.HLS.SegmentMinDuration},
		{"hls.part_target", c.HLS.PartTarget}, {"shared_objects.webhook_timeout", c.SharedObjects.WebhookTimeout},
		{"hooks.timeout", c.Hooks.Timeout}, {"orchestrator.play_token_step", c.Orchestrator.PlayTokenStep},
	} {
		if d.v < 0 {
			bad(d.key, "", "%s: want a duration ≥ 0", d.v)
		}
	}
	for _, n := range []struct {
		key  string
		flag string
		v    float64
	}{
		{"rtmp.max_connections", "", float64(c.RTMP.MaxConnections)}, {"capacity.viewers", "capacity-viewers", float64(c.Capacity.Viewers)},
		{"capacity.mbps", "capacity-mbps", c.Capacity.Mbps}, {"orchestrator.threshold", "threshold", c.Orchestrator.Threshold},
		{"hls.segment_count", "", float64(c.HLS.SegmentCount)}, {"hooks.queue", "", float64(c.Hooks.Queue)},
	} {
		if n.v < 0 {
			bad(n.key, n.flag, "%v: want a number ≥ 0", n.v)
		}
	}
	if c.HLS.PartHoldBack < 2 {
		bad("hls.part_hold_back", "", "%v: want a number of part targets ≥ 2 (the LL-HLS specification's floor)", c.HLS.PartHoldBack)
	}
	if p := c.Dev.RelayBasePort; p < 0 || p > 65535-64 {
		bad("dev.relay_base_port", "relay-base-port", "%d: want a port between 1 and %d, or 0 for free ports", p, 65535-64)
	}
	if err := c.SharedObjects.Rules.Validate(); err != nil {
		bad("shared_objects.rules", "", "%v", err)
	}
	for app, u := range c.SharedObjects.Webhooks {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			bad("shared_objects.webhooks."+app, "webhook", "%q: want an http:// or https:// URL", u)
		}
	}
	if (c.RTMP.TLSListen != "" || c.HTTP.TLSListen != "") && (c.TLS.Cert == "" || c.TLS.Key == "") {
		bad("tls.cert, tls.key", "tls-cert, --tls-key", "rtmp.tls_listen (--rtmps) and http.tls_listen (--https) need a certificate and its key")
	}
	if c.Play.TokenSecret != "" && c.Orchestrator.PlayTokenTTL <= 0 {
		bad("orchestrator.play_token_ttl", "play-token-ttl", "%s: want a positive duration", c.Orchestrator.PlayTokenTTL)
	}
	for _, h := range []struct{ key, flag, u string }{
		{"hooks.on_publish", "hook-on-publish", c.Hooks.OnPublish}, {"hooks.on_play", "hook-on-play", c.Hooks.OnPlay},
		{"hooks.on_unpublish", "hook-on-unpublish", c.Hooks.OnUnpublish}, {"hooks.on_stop", "hook-on-stop", c.Hooks.OnStop},
	} {
		if h.u == "" {
			continue
		}
		if pu, err := url.Parse(h.u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			bad(h.key, h.flag, "%q: want an http:// or https:// URL", h.u)
		}
	}
	return errors.Join(errs...)
}

// checkUpstream accepts rtmp://HOST:PORT or rtmps://HOST:PORT (a trailing
// slash is fine).
func checkUpstream(raw string) error {
	const want = "want rtmp://HOST:PORT (or rtmps://) of the primary or a parent relay"
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New(want)
	}
	if u.Scheme != "rtmp" && u.Scheme != "rtmps" {
		if u.Scheme == "" {
			return fmt.Errorf("no scheme: %s", want)
		}
		return fmt.Errorf("scheme %s: %s", u.Scheme, want)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("no host: %s", want)
	}
	if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return fmt.Errorf("a path or query: %s (the app and stream name come from each viewer)", want)
	}
	return nil
}
