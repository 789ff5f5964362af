package httpswarm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/relaymesh/relaymesh/loadtest/internal/throttle"
)

// Request kinds, as counted in the report.
const (
	reqPlaylist = "playlist" // multivariant, media playlist or MPD, answered at once
	reqBlocking = "blocking" // a blocking playlist reload (_HLS_msn)
	reqInit     = "init"
	reqSegment  = "segment"
	reqPart     = "part"
)

var errTooLarge = errors.New("response too large")

// newHTTPClient is one player's HTTP client: its own connections, and with
// a limiter, a userspace byte-rate limit on everything it reads (and a small
// socket receive buffer, so the kernel does not hide the limit).
func newHTTPClient(ctx context.Context, cfg *Config, link *throttle.Link) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		DialContext: func(dctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(dctx, network, addr)
			if err != nil || link == nil {
				return c, err
			}
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(64 << 10)
			}
			return link.Conn(ctx, c), nil
		},
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: cfg.RequestTimeout,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   cfg.RequestTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			return nil
		},
	}
}

// fetched is one finished request.
type fetched struct {
	Body     []byte   // for playlists and manifests only
	Final    *url.URL // after redirects
	Bytes    int64
	Transfer time.Duration // first body byte to last
	Total    time.Duration // request sent to last byte (a server's hold included)
}

// errStatus is an HTTP error answer.
type errStatus struct {
	code int
	url  string
}

func (e *errStatus) Error() string { return fmt.Sprintf("%s: HTTP %d", e.url, e.code) }

// errKind names an error for the report's errors by kind.
func errKind(err error) string {
	var st *errStatus
	var ne net.Error
	switch {
	case errors.As(err, &st):
		return fmt.Sprintf("http_%d", st.code)
	case errors.Is(err, errParse):
		return "parse"
	case errors.Is(err, errTooLarge):
		return "too_large"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "eof"
	}
	return "other"
}

// get fetches u, keeping the body when keep (up to limit bytes).
func (c *client) get(ctx context.Context, u, kind string, keep bool, limit int64) (*fetched, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if c.sess != "" {
		q := req.URL.Query()
		q.Set("session", c.sess)
		req.URL.RawQuery = q.Encode()
	}
	c.count(kind, 0)
	sent := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	f := &fetched{Final: resp.Request.URL}
	if resp.StatusCode != http.StatusOK {
		n, _ := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		c.count("", n)
		return nil, &errStatus{code: resp.StatusCode, url: u}
	}
	buf := c.buf()
	defer c.putBuf(buf)
	var first time.Time
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if first.IsZero() {
				first = time.Now()
			}
			f.Bytes += int64(n)
			if f.Bytes > limit {
				c.count("", f.Bytes)
				return nil, fmt.Errorf("%s: %w (over %d bytes)", u, errTooLarge, limit)
			}
			if keep {
				f.Body = append(f.Body, buf[:n]...)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			c.count("", f.Bytes)
			return nil, rerr
		}
	}
	if !first.IsZero() {
		f.Transfer = time.Since(first)
	}
	f.Total = time.Since(sent)
	c.count("", f.Bytes)
	return f, nil
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (c *client) buf() []byte     { return *(bufPool.Get().(*[]byte)) }
func (c *client) putBuf(b []byte) { bufPool.Put(&b) }
