// Package httpfloor is the HTTP serving floor of the HLS comparison
// (loadtest peer --proto hls): a mirror of a relay's playlist and its
// segments, served from memory by Go's net/http with nothing else on the
// path (no packaging, no middleware, no metrics). What it costs per added
// viewer is what any server built on net/http costs for the same requests
// and bytes; relaymesh's relay is measured against it as against the RTMP
// fan-out floor.
package httpfloor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist/primitives"
)

// Config describes a mirror.
type Config struct {
	// Upstream is the media playlist mirrored (http://…/muxed.m3u8).
	Upstream string
	// Poll is how often the playlist is fetched again (default 250 ms).
	Poll time.Duration
	// Keep is how many files are kept besides the playlist (default 32).
	Keep int
}

// maxFile bounds one mirrored file.
const maxFile = 64 << 20

// Mirror serves a copy of Config.Upstream's playlist at /NAME (its base
// name) and the files it names at their relative addresses.
type Mirror struct {
	cfg    Config
	base   *url.URL
	name   string
	client *http.Client

	mu       sync.RWMutex
	playlist []byte
	files    map[string][]byte
	order    []string
}

// New checks cfg and returns a mirror; Run fills it.
func New(cfg Config) (*Mirror, error) {
	u, err := url.Parse(cfg.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("httpfloor: upstream %q: want an http URL of a media playlist", cfg.Upstream)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	if cfg.Keep <= 0 {
		cfg.Keep = 32
	}
	return &Mirror{cfg: cfg, base: u, name: path.Base(u.Path), client: &http.Client{Timeout: 10 * time.Second},
		files: map[string][]byte{}}, nil
}

// Run fetches the playlist every Poll and the files it names once, until
// ctx ends.
func (m *Mirror) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Poll)
	defer t.Stop()
	for {
		_ = m.refresh(ctx) // a failed poll keeps the last copy
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (m *Mirror) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("httpfloor: %s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxFile+1))
	if err == nil && len(b) > maxFile {
		err = errors.New("httpfloor: " + u + ": too large")
	}
	return b, err
}

// refresh fetches the playlist, then the files it names that are not here
// yet; the new playlist is served once they all are.
func (m *Mirror) refresh(ctx context.Context) error {
	pl, err := m.get(ctx, m.cfg.Upstream)
	if err != nil {
		return err
	}
	for _, ref := range References(pl) {
		m.mu.RLock()
		_, have := m.files[ref]
		m.mu.RUnlock()
		if have {
			continue
		}
		u, err := m.base.Parse(ref)
		if err != nil || strings.Contains(ref, "/") {
			continue // only files beside the playlist are mirrored
		}
		b, err := m.get(ctx, u.String())
		if err != nil {
			return err
		}
		m.mu.Lock()
		m.files[ref] = b
		m.order = append(m.order, ref)
		for len(m.order) > m.cfg.Keep {
			delete(m.files, m.order[0])
			m.order = m.order[1:]
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	m.playlist = pl
	m.mu.Unlock()
	return nil
}

// References are the addresses a media playlist names: its segments and
// its EXT-X-MAP.
func References(pl []byte) []string {
	var refs []string
	// Lines end with LF or CR LF; a line is a tag, a URI as it stands, or
	// blank (RFC 8216, 4.1). A CR is part of the terminator only before an
	// LF: in a last line with no terminator it is the line's own.
	lines := strings.Split(string(pl), "\n")
	for i, line := range lines {
		if i < len(lines)-1 {
			line = strings.TrimSuffix(line, "\r")
		}
		switch {
		case line == "":
		case strings.HasPrefix(line, "#EXT-X-MAP:"):
			// The attribute list as gohlslib reads it (quoted values or
			// not, the last of a repeated name).
			var attrs primitives.Attributes
			if attrs.Unmarshal(line[len("#EXT-X-MAP:"):]) == nil && attrs["URI"] != "" {
				refs = append(refs, attrs["URI"])
			}
		case !strings.HasPrefix(line, "#"):
			refs = append(refs, line)
		}
	}
	return refs
}

// ServeHTTP serves the playlist and the files it names from memory: the
// headers, then the body in one Write.
func (m *Mirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/")
	m.mu.RLock()
	body, ok := m.files[name]
	ctype, cache := "video/mp4", "max-age=60"
	if name == m.name {
		body, ok = m.playlist, m.playlist != nil
		ctype, cache = "application/vnd.apple.mpegurl", "max-age=1"
	}
	m.mu.RUnlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", cache)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}
