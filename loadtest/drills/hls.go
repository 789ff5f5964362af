package drills

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// HLSViewer is a plain HLS client run by the harness from a viewer host:
// it reloads the media playlist of the first variant every second and
// fetches each new segment, counting failures and the longest time without
// a new segment. (It stands in until the HLS load tester can be driven.)
type HLSViewer struct {
	Host *Host
	URL  string // the multivariant playlist

	mu       sync.Mutex
	segments int
	fails    []time.Time
	news     []time.Time // when each new segment was fetched
	lastErr  string
}

func (v *HLSViewer) client() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext:     func(ctx context.Context, _, addr string) (net.Conn, error) { return v.Host.NS.Dial(ctx, addr) },
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

// Run plays until ctx ends.
func (v *HLSViewer) Run(ctx context.Context) {
	c := v.client()
	defer c.CloseIdleConnections()
	base, err := url.Parse(v.URL)
	if err != nil {
		v.fail(err)
		return
	}
	var media *url.URL
	seen := map[string]bool{}
	for ctx.Err() == nil {
		if media == nil {
			b, err := get(ctx, c, v.URL)
			if err != nil {
				v.fail(err)
				sleep(ctx, time.Second)
				continue
			}
			vs := uris(base, b)
			if len(vs) == 0 {
				v.fail(fmt.Errorf("%s: no variants", v.URL))
				sleep(ctx, time.Second)
				continue
			}
			media, _ = url.Parse(vs[0])
		}
		b, err := get(ctx, c, media.String())
		if err != nil {
			if ctx.Err() == nil {
				v.fail(err)
			}
			sleep(ctx, time.Second)
			continue
		}
		for _, s := range uris(media, b) {
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
