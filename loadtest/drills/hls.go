package drills

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist/primitives"
)

// HLSViewer is an HLS client run by the harness from a viewer host that
// follows content steering as players do (hls.js, AVPlayer): it reads the
// multivariant playlist's EXT-X-CONTENT-STEERING, asks the steering server
// every TTL, plays the first pathway of the answer it can, and when a
// media playlist fails it moves at once to the next pathway of the last
// answer (and asks the steering server again). With every pathway failing
// it goes back to Play (the redirector's /play for HLS), when set. It
// reloads the media playlist every second and fetches each new segment,
// counting failures and the longest time without a new segment.
type HLSViewer struct {
	Host *Host
	URL  string // the multivariant playlist
	Play string // the redirector's /play/APP/NAME?proto=hls (optional)

	mu       sync.Mutex
	segments int
	fails    []time.Time
	news     []time.Time // when each new segment was fetched
	lastErr  string
	pathways []string // the pathways played, in order
}

// Pathways are the steering pathways the viewer played from, in order.
func (v *HLSViewer) Pathways() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.pathways)
}

func (v *HLSViewer) client() *http.Client {
	dial := func(ctx context.Context, _, addr string) (net.Conn, error) {
		if v.Host == nil || v.Host.NS == nil { // tests: this process's network
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
		return v.Host.NS.Dial(ctx, addr)
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext:     dial,
		MaxIdleConns:    2,
		IdleConnTimeout: 10 * time.Second,
	}}
}

func (v *HLSViewer) fail(err error) {
	v.mu.Lock()
	v.fails = append(v.fails, time.Now())
	v.lastErr = err.Error()
	v.mu.Unlock()
}

// get fetches u, bounded to 16 MiB.
func get(ctx context.Context, c *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	return b, nil
}

// uris are the URI lines of a playlist (segments or variants), resolved.
func uris(base *url.URL, body []byte) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if ref, err := url.Parse(line); err == nil {
			out = append(out, base.ResolveReference(ref).String())
		}
	}
	return out
}

// attrs parses an HLS attribute list (KEY=VALUE,KEY="VALUE",…) with
// gohlslib's own parser, so the drills read a playlist as the packager's
// library does; a list it cannot finish keeps the attributes before the
// fault.
func attrs(list string) map[string]string {
	var a primitives.Attributes
	_ = a.Unmarshal(list)
	return a
}

// multivariant is what a player takes from a multivariant playlist: the
// first variant, its stable id, and the steering server and pathway.
type multivariant struct {
	variant, stableID string
	steerURI, pathway string
}

func parseMultivariant(base *url.URL, body []byte) (multivariant, error) {
	var mv multivariant
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	var inf map[string]string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "#EXT-X-CONTENT-STEERING:"):
			a := attrs(strings.TrimPrefix(line, "#EXT-X-CONTENT-STEERING:"))
			if ref, err := url.Parse(a["SERVER-URI"]); err == nil && a["SERVER-URI"] != "" {
				mv.steerURI = base.ResolveReference(ref).String()
			}
			mv.pathway = a["PATHWAY-ID"]
		case strings.HasPrefix(line, "#EXT-X-STREAM-INF:"):
			inf = attrs(strings.TrimPrefix(line, "#EXT-X-STREAM-INF:"))
		case line != "" && !strings.HasPrefix(line, "#") && inf != nil && mv.variant == "":
			ref, err := url.Parse(line)
			if err != nil {
				return mv, err
			}
			mv.variant, mv.stableID = base.ResolveReference(ref).String(), inf["STABLE-VARIANT-ID"]
		}
	}
	if mv.variant == "" {
		return mv, fmt.Errorf("%s: no variants", base)
	}
	if mv.pathway == "" {
		mv.pathway = "."
	}
	return mv, nil
}

// steeringAnswer is the part of a steering manifest a player uses.
type steeringAnswer struct {
	TTL             int      `json:"TTL"`
	ReloadURI       string   `json:"RELOAD-URI"`
	PathwayPriority []string `json:"PATHWAY-PRIORITY"`
	PathwayClones   []struct {
		BaseID         string `json:"BASE-ID"`
		ID             string `json:"ID"`
		URIReplacement struct {
			Host           string            `json:"HOST"`
			PerVariantURIs map[string]string `json:"PER-VARIANT-URIS"`
		} `json:"URI-REPLACEMENT"`
	} `json:"PATHWAY-CLONES"`
}

// steerer is a player's content steering state.
type steerer struct {
	uri      string            // where to ask next
	media    map[string]string // pathway → media playlist URL
	prio     []string          // the last answer's pathways
	next     time.Time         // when to ask again
	penalty  map[string]time.Time
	current  string
	stableID string
}

func newSteerer(mv multivariant) *steerer {
	return &steerer{uri: mv.steerURI, media: map[string]string{mv.pathway: mv.variant}, prio: []string{mv.pathway},
		penalty: map[string]time.Time{}, current: mv.pathway, stableID: mv.stableID}
}

// ask fetches the steering manifest (with _HLS_pathway as players send it).
func (st *steerer) ask(ctx context.Context, c *http.Client) error {
	if st.uri == "" {
		return nil
	}
	u, err := url.Parse(st.uri)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("_HLS_pathway", st.current)
	u.RawQuery = q.Encode()
	st.next = time.Now().Add(5 * time.Second)
	b, err := get(ctx, c, u.String())
	if err != nil {
		return err
	}
	var a steeringAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("steering answer: %w", err)
	}
	for _, cl := range a.PathwayClones {
		if m := cl.URIReplacement.PerVariantURIs[st.stableID]; m != "" && cl.ID != "" {
			st.media[cl.ID] = m
		}
	}
	if len(a.PathwayPriority) > 0 {
		st.prio = a.PathwayPriority
	}
	if a.TTL > 0 {
		st.next = time.Now().Add(time.Duration(a.TTL) * time.Second)
	}
	if a.ReloadURI != "" {
		if ref, err := url.Parse(a.ReloadURI); err == nil {
			st.uri = u.ResolveReference(ref).String()
		}
	}
	return nil
}

// choose is the first pathway of the last answer the player can play and
// that has not failed lately ("" when none).
func (st *steerer) choose(now time.Time) string {
	for _, p := range st.prio {
		if st.media[p] != "" && now.After(st.penalty[p]) {
			return p
		}
	}
	return ""
}

// Run plays until ctx ends.
func (v *HLSViewer) Run(ctx context.Context) {
	c := v.client()
	defer c.CloseIdleConnections()
	master := v.URL
	var st *steerer
	seen := map[string]bool{}
	for ctx.Err() == nil {
		if st == nil {
			mv, err := v.loadMultivariant(ctx, c, master)
			if err != nil {
				v.fail(err)
				if v.Play != "" {
					if u, err := v.replay(ctx, c); err == nil {
						master = u
					}
				}
				sleep(ctx, time.Second)
				continue
			}
			st = newSteerer(mv)
			v.played(st.current)
			if err := st.ask(ctx, c); err != nil && ctx.Err() == nil {
				v.fail(err)
			}
		}
		now := time.Now()
		if st.uri != "" && !now.Before(st.next) {
			if err := st.ask(ctx, c); err != nil && ctx.Err() == nil {
				v.fail(err)
			}
		}
		// Players move to the first pathway of the answer.
		if p := st.choose(now); p != "" && p != st.current {
			st.current = p
			v.played(p)
		}
		media := st.media[st.current]
		b, err := get(ctx, c, media)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			v.fail(err)
			// This pathway failed: the next one of the last answer at once,
			// and a fresh answer; with none left, the redirector again.
			st.penalty[st.current] = time.Now().Add(10 * time.Second)
			if err := st.ask(ctx, c); err != nil && ctx.Err() == nil {
				v.fail(err)
			}
			if p := st.choose(time.Now()); p != "" {
				st.current = p
				v.played(p)
				continue
			}
			if v.Play != "" {
				if u, err := v.replay(ctx, c); err == nil {
					master, st = u, nil
					continue
				}
			}
			sleep(ctx, time.Second)
			continue
		}
		mu, _ := url.Parse(media)
		segs := uris(mu, b)
		fresh := 0
		for _, s := range segs {
			if !seen[s] {
				fresh++
			}
		}
		// On a new server (its segment URIs are new) a player starts near
		// the live edge rather than at the start of the playlist.
		if fresh == len(segs) && len(seen) > 0 && len(segs) > 3 {
			for _, s := range segs[:len(segs)-3] {
				seen[s] = true
			}
		}
		for _, s := range segs {
			if seen[s] {
				continue
			}
			seen[s] = true
			if _, err := get(ctx, c, s); err != nil {
				if ctx.Err() == nil {
					v.fail(err)
				}
				continue
			}
			v.mu.Lock()
			v.segments++
			v.news = append(v.news, time.Now())
			v.mu.Unlock()
		}
		sleep(ctx, time.Second)
	}
}

func (v *HLSViewer) loadMultivariant(ctx context.Context, c *http.Client, u string) (multivariant, error) {
	base, err := url.Parse(u)
	if err != nil {
		return multivariant{}, err
	}
	b, err := get(ctx, c, u)
	if err != nil {
		return multivariant{}, err
	}
	return parseMultivariant(base, b)
}

// replay asks the redirector where to play (a 302 to a multivariant
// playlist, or JSON with "url").
func (v *HLSViewer) replay(ctx context.Context, c *http.Client) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", v.Play, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var ans struct {
		URL string `json:"url"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ans); err != nil || ans.URL == "" {
		return "", fmt.Errorf("/play: %s: no url (%v)", resp.Status, err)
	}
	return ans.URL, nil
}

func (v *HLSViewer) played(p string) {
	v.mu.Lock()
	v.pathways = append(v.pathways, p)
	v.mu.Unlock()
}

// Stats are failed fetches after t, segments fetched, and the longest time
// without a new segment within [from, to].
func (v *HLSViewer) Stats(t, from, to time.Time) (fails, segments int, stall time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, f := range v.fails {
		if f.After(t) {
			fails++
		}
	}
	last := from
	for _, n := range v.news {
		if n.Before(from) {
			continue
		}
		if n.After(to) {
			break
		}
		stall = max(stall, n.Sub(last))
		last = n
	}
	return fails, v.segments, max(stall, to.Sub(last))
}
