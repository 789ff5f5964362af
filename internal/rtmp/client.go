package rtmp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"
)

// URL is a parsed rtmp:// or rtmps:// address: rtmp://host[:port]/app[/instance]/name[?query].
type URL struct {
	Host  string // host:port (port 1935 when absent, 443 for rtmps)
	TLS   bool   // rtmps: the connection runs over TLS (ConnConfig.TLS)
	App   string
	Name  string // stream name ("" for a connection to an application scope)
	Query string // raw query, passed upstream with connect and play
}

// ParseURL splits an rtmp URL. With appSegments = 1 the first path segment
// is the application and the rest is the stream name (rtmp://h/live/cam1);
// with 2 the application is app/instance (rtmp://h/chat/room).
func ParseURL(raw string, appSegments int) (URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return URL{}, err
	}
	if u.Scheme != "rtmp" && u.Scheme != "rtmps" {
		return URL{}, fmt.Errorf("%q: scheme must be rtmp or rtmps", raw)
	}
	host := u.Host
	if u.Port() == "" {
		port := "1935"
		if u.Scheme == "rtmps" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) < appSegments || parts[0] == "" {
		return URL{}, fmt.Errorf("%q: no application in path", raw)
	}
	return URL{Host: host, TLS: u.Scheme == "rtmps", App: strings.Join(parts[:appSegments], "/"), Name: strings.Join(parts[appSegments:], "/"), Query: u.RawQuery}, nil
}

// TCURL is the tcUrl sent with connect.
func (u URL) TCURL() string {
	if u.TLS {
		return "rtmps://" + u.Host + "/" + u.App
	}
	return "rtmp://" + u.Host + "/" + u.App
}

// ClientConn is the client side of an RTMP connection: connect, create a
// stream, play or publish. Until Play/Publish returns, responses are read
// synchronously; afterwards the caller reads with ReadMessage.
type ClientConn struct {
	*Conn
	URL     URL
	txid    float64
	pending []Message // messages read while waiting for a response
}

// Dial connects to u.Host, performs the handshake and the connect command.
func Dial(ctx context.Context, u URL, cfg ConnConfig, log *slog.Logger) (*ClientConn, error) {
	var d net.Dialer
	cfg = cfg.WithDefaults()
	dctx, cancel := context.WithTimeout(ctx, cfg.HandshakeTimeout)
	defer cancel()
	var nc net.Conn
	var err error
	if u.TLS {
		td := tls.Dialer{NetDialer: &d, Config: cfg.TLS}
		nc, err = td.DialContext(dctx, "tcp", u.Host)
	} else {
		nc, err = d.DialContext(dctx, "tcp", u.Host)
	}
	if err != nil {
		return nil, err
	}
	return DialConn(ctx, nc, u, cfg, log)
}

// DialConn is Dial over a connection the caller made (e.g. throttled).
func DialConn(ctx context.Context, nc net.Conn, u URL, cfg ConnConfig, log *slog.Logger) (*ClientConn, error) {
	cfg = cfg.WithDefaults()
	dctx, cancel := context.WithTimeout(ctx, cfg.HandshakeTimeout)
	defer cancel()
	stop := context.AfterFunc(dctx, func() { _ = nc.SetDeadline(time.Now()) })
	c, err := Client(nc, cfg, log)
	if !stop() {
		if err == nil {
			c.Close(nil)
		}
		return nil, fmt.Errorf("rtmp dial %s: %w", u.Host, context.Cause(dctx))
	}
	if err != nil {
		return nil, err
	}
	cc := &ClientConn{Conn: c, URL: u, txid: 1}
	if err := cc.connect(dctx); err != nil {
		c.Close(err)
		return nil, err
	}
	return cc, nil
}

func (c *ClientConn) nextTx() float64 { c.txid++; return c.txid }

// call sends a command and waits for its _result/_error, keeping other
// messages for later ReadMessage calls.
func (c *ClientConn) call(ctx context.Context, streamID uint32, name string, txid float64, obj any, args ...any) (*Command, error) {
	if err := c.SendCommand(streamID, append([]any{name, txid, obj}, args...)...); err != nil {
		return nil, err
	}
	for {
		m, err := c.readCtx(ctx)
		if err != nil {
			return nil, err
		}
		if m.Type == TypeCommandAMF0 || m.Type == TypeCommandAMF3 {
			cmd, err := ParseCommand(m)
			if err != nil {
				return nil, err
			}
			if (cmd.Name == "_result" || cmd.Name == "_error") && cmd.TransactionID == txid {
				if cmd.Name == "_error" {
					return cmd, fmt.Errorf("%s: %s", name, describe(cmd))
				}
				return cmd, nil
			}
		}
		if len(c.pending) < 64 {
			c.pending = append(c.pending, m)
		}
	}
}

func describe(cmd *Command) string {
	for _, a := range cmd.Args {
		if o, ok := a.(map[string]any); ok {
			code, _ := o["code"].(string)
			desc, _ := o["description"].(string)
			return strings.TrimSpace(code + " " + desc)
		}
	}
	return "error"
}

// readCtx reads a message, giving up when ctx ends.
func (c *ClientConn) readCtx(ctx context.Context) (Message, error) {
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetReadDeadline(time.Now()) })
	m, err := c.Conn.ReadMessage()
	if !stop() {
		return m, ctx.Err()
	}
	return m, err
}

// ReadMessage returns buffered messages first, then reads from the peer.
func (c *ClientConn) ReadMessage() (Message, error) {
	if len(c.pending) > 0 {
		m := c.pending[0]
		c.pending = c.pending[1:]
		return m, nil
	}
	return c.Conn.ReadMessage()
}

func (c *ClientConn) connect(ctx context.Context) error {
	app := c.URL.App
	tc := c.URL.TCURL()
	if c.URL.Query != "" {
		app += "?" + c.URL.Query
		tc += "?" + c.URL.Query
	}
	_ = c.Send(windowAckMessage(c.cfg.WindowAckSize))
	_ = c.Send(chunkSizeMessage(DefaultChunkSize))
	obj := map[string]any{
		"app": app, "flashVer": "LNX 9,0,124,2", "tcUrl": tc, "fpad": false,
		"capabilities": 15.0, "audioCodecs": 4071.0, "videoCodecs": 252.0, "videoFunction": 1.0, "objectEncoding": 0.0,
	}
	for k, v := range c.cfg.ConnectProps {
		obj[k] = v
	}
	_, err := c.call(ctx, 0, "connect", 1, obj)
	return err
}

// CreateStream creates a message stream and returns its id.
func (c *ClientConn) CreateStream(ctx context.Context) (uint32, error) {
	res, err := c.call(ctx, 0, "createStream", c.nextTx(), nil)
	if err != nil {
		return 0, err
	}
	for _, a := range res.Args {
		if n, ok := a.(float64); ok && n > 0 && n < 1<<24 {
			return uint32(n), nil
		}
	}
	return 0, errors.New("createStream: no stream id in result")
}

// waitStatus reads until an onStatus on streamID arrives.
func (c *ClientConn) waitStatus(ctx context.Context, streamID uint32, want ...string) (Status, error) {
	for {
		m, err := c.readCtx(ctx)
		if err != nil {
			return Status{}, err
		}
		if m.Type == TypeCommandAMF0 && m.StreamID == streamID {
			cmd, err := ParseCommand(m)
			if err == nil && cmd.Name == "onStatus" {
				st := statusOf(cmd)
				if st.Level == "error" {
					return st, st
				}
				for _, w := range want {
					if st.Code == w {
						return st, nil
					}
				}
				continue
			}
		}
		if len(c.pending) < 256 {
			c.pending = append(c.pending, m)
		}
	}
}

func statusOf(cmd *Command) Status {
	var st Status
	for _, a := range cmd.Args {
		if o, ok := a.(map[string]any); ok {
			st.Level, _ = o["level"].(string)
			st.Code, _ = o["code"].(string)
			st.Description, _ = o["description"].(string)
		}
	}
	return st
}

// StatusOf extracts the info object of an onStatus command.
func StatusOf(cmd *Command) Status { return statusOf(cmd) }

// Play creates a stream and plays name on it (with the URL's query passed
// along), returning once the server answers NetStream.Play.Start. Media and
// further status messages then come from ReadMessage.
func (c *ClientConn) Play(ctx context.Context, name string) (uint32, error) {
	id, err := c.CreateStream(ctx)
	if err != nil {
		return 0, err
	}
	if c.URL.Query != "" && !strings.Contains(name, "?") {
		name += "?" + c.URL.Query
	}
	_ = c.Send(setBufferLengthMessage(id, 1000))
	if err := c.SendCommand(id, "play", 0.0, nil, name, -1000.0); err != nil {
		return 0, err
	}
	if _, err := c.waitStatus(ctx, id, CodePlayStart); err != nil {
		return 0, err
	}
	return id, nil
}

// Publish creates a stream and publishes name on it ("live" type).
func (c *ClientConn) Publish(ctx context.Context, name string) (uint32, error) {
	_ = c.SendCommand(0, "releaseStream", c.nextTx(), nil, name)
	_ = c.SendCommand(0, "FCPublish", c.nextTx(), nil, name)
	id, err := c.CreateStream(ctx)
	if err != nil {
		return 0, err
	}
	if err := c.SendCommand(id, "publish", 0.0, nil, name, "live"); err != nil {
		return 0, err
	}
	if _, err := c.waitStatus(ctx, id, CodePublishStart); err != nil {
		return 0, err
	}
	return id, nil
}
