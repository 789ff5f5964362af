package rtmp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/relaymesh/relaymesh/internal/av"
)

// ConnectRequest is what a client asked for in its connect command.
type ConnectRequest struct {
	App            string // e.g. "live" or "live/room" (app/instance, as Flash clients send)
	Query          string // query string of the app or tcUrl (auth tokens)
	TCURL          string
	FlashVer       string
	ObjectEncoding float64
	Object         map[string]any
}

// RelayMarker is the connect-object property by which a downstream relay
// identifies itself (its value is the relay's id); an upstream serves it
// every frame (no drop policy) and multiplexes its clients' shared objects
// and calls over it.
const RelayMarker = "relaymeshRelay"

// FromRelay reports whether the connect came from a downstream relay.
func (r *ConnectRequest) FromRelay() bool {
	if r == nil {
		return false
	}
	_, ok := r.Object[RelayMarker]
	return ok
}

// StreamRequest is a publish or play on one message stream.
type StreamRequest struct {
	App      string
	Name     string // stream name without the query string
	Query    url.Values
	RawQuery string
	StreamID uint32
}

// Publisher receives the media and data messages a broadcaster sends.
type Publisher interface {
	FrameWriter
	Close() // the broadcaster stopped or left
}

// Handler decides what a server connection may do. Methods are called from
// the connection's read goroutine; they may block briefly (e.g. a relay's
// Play waits for its upstream to start) but must honour ctx.
type Handler interface {
	// Connect accepts or rejects the connection (return a Status to choose the code).
	Connect(ctx context.Context, s *Session, req *ConnectRequest) error
	// Publish returns where the broadcaster's messages go, or a Status error.
	Publish(ctx context.Context, s *Session, req *StreamRequest) (Publisher, error)
	// Play returns the media source for a viewer, or a Status error. The source
	// must call s.MediaReady() whenever frames become pending.
	Play(ctx context.Context, s *Session, req *StreamRequest) (MediaSource, error)
	// Message gets everything else: unknown commands (RPC), shared-object
	// messages, results of server-to-client calls. It may be a no-op.
	Message(ctx context.Context, s *Session, m Message)
	// Closed is called once when the connection ends.
	Closed(s *Session, err error)
}

// Session is the server side of one RTMP connection.
type Session struct {
	ID      string
	Conn    *Conn
	Connect *ConnectRequest
	Log     *slog.Logger

	mu         sync.Mutex
	nextStream uint32
	publishers map[uint32]Publisher
	playing    map[uint32]string // stream id → name of the stream played there
	leaving    bool              // told to leave (Leave): no new plays, no connect
	notice     LeaveNotice       // what it was told
	// Value is for the handler's own per-session state.
	Value any

	cancel    context.CancelFunc // ends the context of the session's loop
	stopClose func() bool        // stops the close on the server's context
}

// ConnectInfo is the connect request (nil before connect); unlike the
// Connect field it may be read from any goroutine.
func (s *Session) ConnectInfo() *ConnectRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Connect
}

// MediaReady signals the connection's writer that a media source has frames
// pending (an alternative to signalling Notify; see Conn.MediaReady).
func (s *Session) MediaReady() { s.Conn.MediaReady() }

// RemoteAddr is the client's address as a string.
func (s *Session) RemoteAddr() string { return s.Conn.RemoteAddr().String() }

var sessionSeq atomic.Uint64

// Serve runs the protocol of one accepted connection until it ends.
//
// The connection's goroutine spends its life parked in a read, and a
// thousand viewers are a thousand such goroutines. The runtime halves a
// goroutine's stack at a collection while it uses under a quarter of it
// (counting 800 bytes more than its frames), so what is on the stack while
// it waits decides whether it keeps 8 KiB or 4. The loop therefore waits
// for the peer's next bytes in a shallow call of its own (waitInput) before
// it reads a message, and the set-up, the end and the handling of each
// message are calls of their own, off the stack while it waits
// (TestParkedViewerStack in internal/serve holds the line).
func Serve(ctx context.Context, nc net.Conn, cfg *ConnConfig, h Handler, log *slog.Logger) {
	s, sctx := open(ctx, nc, cfg, log)
	if s == nil {
		return
	}
	s.end(h, s.loop(sctx, h))
}

// open runs the handshake and registers the session; nil if the handshake
// failed. The context it returns ends with the connection.
func open(ctx context.Context, nc net.Conn, cfg *ConnConfig, log *slog.Logger) (*Session, context.Context) {
	if log == nil {
		log = slog.Default()
	}
	id := fmt.Sprintf("c%d", sessionSeq.Add(1))
	log = log.With("conn", id, "remote", nc.RemoteAddr().String())
	c, err := Accept(nc, *cfg, log)
	if err != nil {
		cfg.Metrics.handshakeFailed(err)
		log.Info("handshake failed", "err", err)
		return nil, nil
	}
	s := &Session{ID: id, Conn: c, Log: log, publishers: map[uint32]Publisher{}, playing: map[uint32]string{}}
	cfg.Sessions.add(s)
	sctx, cancel := c.Context(ctx)
	s.cancel = cancel
	s.stopClose = context.AfterFunc(ctx, func() { c.Close(ServerClosing(ctx)) })
	return s, sctx
}

// end closes the session after its loop returned err.
func (s *Session) end(h Handler, err error) {
	c := s.Conn
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && c.Err() == nil {
		c.cfg.Metrics.timedOut(timeoutIdle)
	}
	c.Close(err)
	s.closeStreams()
	h.Closed(s, err)
	// Each stream still playing ends with the connection: logged and
	// counted once, with the connection's first close error as its reason.
	viewers := s.endViewers(c.Err())
	if err := c.Err(); !viewers && err != nil && !errors.Is(err, ErrClosed) && !isEOF(err) && !errors.Is(err, ErrServerClosing) {
		s.Log.Info("connection closed", "err", err)
	} else {
		s.Log.Debug("connection closed", "err", err)
	}
	s.stopClose()
	s.cancel()
	c.cfg.Sessions.remove(s)
}

// endViewers logs and counts the end of every stream still playing on the
// session, and reports whether there was one.
func (s *Session) endViewers(err error) bool {
	s.mu.Lock()
	playing := s.playing
	s.playing = map[uint32]string{}
	s.mu.Unlock()
	for _, name := range playing {
		s.viewerClosed(name, CloseReason(err), err)
	}
	return len(playing) > 0
}

// viewerClosed is the one log line and count of a playing stream's end.
func (s *Session) viewerClosed(name, reason string, err error) {
	s.Conn.cfg.Metrics.viewerClosed(reason)
	args := []any{"stream", name, "reason", reason}
	if err != nil {
		args = append(args, "err", err)
	}
	switch reason {
	case ReasonTooSlow, ReasonWriteTimeout, ReasonOverflow, ReasonControlQueue:
		s.Log.Warn("viewer closed", args...)
	default:
		s.Log.Info("viewer closed", args...)
	}
}

func (s *Session) closeStreams() {
	s.mu.Lock()
	pubs := s.publishers
	s.publishers = map[uint32]Publisher{}
	s.mu.Unlock()
	for _, p := range pubs {
		p.Close()
	}
}

func (s *Session) loop(ctx context.Context, h Handler) error {
	for {
		if err := s.Conn.waitInput(); err != nil {
			return err
		}
		m, err := s.Conn.ReadMessage()
		if err != nil {
			return err
		}
		if err := s.handle(ctx, h, m); err != nil {
			return err
		}
	}
}

// handle acts on one message from the peer (a call of its own: see Serve).
//
//go:noinline
func (s *Session) handle(ctx context.Context, h Handler, m Message) error {
	switch m.Type {
	case TypeCommandAMF0, TypeCommandAMF3:
		cmd, err := ParseCommand(m)
		if err != nil {
			// A malformed command is a protocol error from this peer only.
			return err
		}
		return s.command(ctx, h, cmd, m)
	case TypeSharedObjectAMF0, TypeSharedObjectAMF3:
		if s.Connect == nil {
			return protocolErr("shared object message before connect")
		}
		h.Message(ctx, s, m)
	case TypeUserControl:
	default:
		if media, err := EachFrame(m, s.publisher(m.StreamID)); err != nil {
			s.Log.Debug("bad aggregate message: the rest dropped", "err", err)
		} else if !media {
			s.Log.Debug("unknown message type ignored", "type", m.Type)
		}
	}
	return nil
}

// publisher returns where the media of message stream id goes: its
// publisher's Write, or nowhere when that stream is not publishing.
func (s *Session) publisher(id uint32) FrameWriter {
	s.mu.Lock()
	p := s.publishers[id]
	s.mu.Unlock()
	if p == nil {
		return noMedia{} // media on a stream that is not publishing: ignore
	}
	return p
}

func (s *Session) result(txid float64, values ...any) error {
	return s.Conn.SendCommand(0, append([]any{"_result", txid}, values...)...)
}

func (s *Session) command(ctx context.Context, h Handler, cmd *Command, m Message) error {
	if cmd.Name != "connect" && s.Connect == nil {
		return protocolErr("%q before connect", cmd.Name)
	}
	switch cmd.Name {
	case "connect":
		if s.Connect != nil {
			return protocolErr("second connect")
		}
		return s.connect(ctx, h, cmd)
	case "createStream":
		s.mu.Lock()
		if len(s.publishers)+len(s.playing) > 64 || s.nextStream > 1<<20 {
			s.mu.Unlock()
			return protocolErr("too many streams")
		}
		s.nextStream++
		id := s.nextStream
		s.mu.Unlock()
		return s.result(cmd.TransactionID, nil, float64(id))
	case "releaseStream", "FCPublish", "FCUnpublish", "FCSubscribe", "FCUnsubscribe", "getStreamLength", "_checkbw":
		if cmd.Name == "FCSubscribe" {
			// Live players (edge-aware ones, rtmpdump --live) announce what
			// they will play; FMS answers onFCSubscribe.
			_ = s.Conn.SendCommand(0, "onFCSubscribe", 0.0, nil, map[string]any{"code": CodePlayStart, "description": cmd.Arg(0)})
		}
		if cmd.Name == "FCPublish" {
			_ = s.Conn.SendCommand(0, "onFCPublish", 0.0, nil, map[string]any{"code": CodePublishStart, "description": cmd.Arg(0)})
		}
		if cmd.Name == "FCUnpublish" {
			_ = s.Conn.SendCommand(0, "onFCUnpublish", 0.0, nil, map[string]any{"code": CodeUnpublishSuccess, "description": cmd.Arg(0)})
		}
		if cmd.TransactionID != 0 {
			return s.result(cmd.TransactionID, nil)
		}
		return nil
	case "publish":
		return s.publish(ctx, h, cmd)
	case "play":
		return s.play(ctx, h, cmd)
	case "deleteStream", "closeStream":
		id := cmd.StreamID
		if cmd.Name == "deleteStream" {
			if n, ok := cmdArgNumber(cmd, 0); ok {
				id = uint32(n)
			}
		}
		s.stopStream(id)
		return nil
	case "receiveAudio", "receiveVideo", "pause", "seek", "play2":
		return nil // live streams: nothing to do
	}
	h.Message(ctx, s, m)
	return nil
}

func cmdArgNumber(cmd *Command, i int) (float64, bool) {
	if i < len(cmd.Args) {
		n, ok := cmd.Args[i].(float64)
		return n, ok
	}
	return 0, false
}

func (s *Session) stopStream(id uint32) {
	s.mu.Lock()
	p := s.publishers[id]
	delete(s.publishers, id)
	name, wasPlaying := s.playing[id]
	delete(s.playing, id)
	s.mu.Unlock()
	if p != nil {
		p.Close()
		_ = s.Conn.Send(StatusMessage(id, Status{"status", CodeUnpublishSuccess, "stream unpublished"}))
	}
	if wasPlaying {
		s.Conn.Unbind(id)
		s.viewerClosed(name, ReasonStopped, nil)
	}
}

func (s *Session) connect(ctx context.Context, h Handler, cmd *Command) error {
	req := &ConnectRequest{Object: cmd.Object}
	if cmd.Object != nil {
		req.App, _ = cmd.Object["app"].(string)
		req.TCURL, _ = cmd.Object["tcUrl"].(string)
		req.FlashVer, _ = cmd.Object["flashVer"].(string)
		req.ObjectEncoding, _ = cmd.Object["objectEncoding"].(float64)
	}
	if i := strings.IndexByte(req.App, '?'); i >= 0 {
		req.App, req.Query = req.App[:i], req.App[i+1:]
	} else if u, err := url.Parse(req.TCURL); err == nil && u.RawQuery != "" {
		req.Query = u.RawQuery
	}
	req.App = strings.Trim(req.App, "/")
	if req.App == "" || len(req.App) > 256 {
		s.Conn.cfg.Metrics.commandRefused("connect", CodeConnectRejected)
		_ = s.Conn.SendCommand(0, "_error", cmd.TransactionID, nil, map[string]any{
			"level": "error", "code": CodeConnectRejected, "description": "no application name"})
		s.Conn.CloseAfterFlush(errors.New("connect without app"))
		return nil
	}
	s.mu.Lock()
	leaving, notice := s.leaving, s.notice
	s.mu.Unlock()
	if leaving {
		s.rejectConnect(cmd.TransactionID, req.App, notice)
		return nil
	}
	if err := h.Connect(ctx, s, req); err != nil {
		st := asStatus(err, CodeConnectRejected)
		s.Conn.cfg.Metrics.commandRefused("connect", st.Code)
		s.Log.Info("connect refused", "app", req.App, "code", st.Code, "reason", st.Description)
		_ = s.Conn.SendCommand(0, "_error", cmd.TransactionID, nil, map[string]any{
			"level": "error", "code": st.Code, "description": st.Description})
		s.Conn.CloseAfterFlush(err)
		return nil
	}
	s.Conn.cfg.Metrics.commandAccepted("connect")
	s.Log = s.Log.With("app", req.App)
	s.mu.Lock()
	s.Connect = req // read under s.mu by Leave, from another goroutine
	s.mu.Unlock()
	c := s.Conn
	c.relayLink.Store(req.FromRelay())
	_ = c.Send(windowAckMessage(c.cfg.WindowAckSize))
	_ = c.Send(peerBandwidthMessage(c.cfg.WindowAckSize))
	_ = c.Send(chunkSizeMessage(DefaultChunkSize))
	return s.result(cmd.TransactionID,
		map[string]any{"fmsVer": "FMS/3,5,7,7009", "capabilities": 31.0, "mode": 1.0},
		map[string]any{"level": "status", "code": CodeConnectSuccess, "description": "Connection succeeded.",
			"objectEncoding": req.ObjectEncoding})
}

func asStatus(err error, fallback string) Status {
	var st Status
	if errors.As(err, &st) {
		return st
	}
	return Status{Level: "error", Code: fallback, Description: err.Error()}
}

// withoutQuery is a stream name for the logs: its query (keys, tokens) cut off.
func withoutQuery(raw string) string {
	name, _, _ := strings.Cut(raw, "?")
	return name
}

func (s *Session) streamRequest(cmd *Command) (*StreamRequest, error) {
	raw := cmd.Arg(0)
	if raw == "" || len(raw) > 1024 {
		return nil, Status{"error", CodePlayStreamNotFound, "missing or overlong stream name"}
	}
	name, query, _ := strings.Cut(raw, "?")
	q, _ := url.ParseQuery(query)
	name = strings.Trim(name, "/")
	if name == "" || strings.Contains(name, "..") {
		return nil, Status{"error", CodePlayStreamNotFound, "bad stream name"}
	}
	return &StreamRequest{App: s.Connect.App, Name: name, Query: q, RawQuery: query, StreamID: cmd.StreamID}, nil
}

func (s *Session) publish(ctx context.Context, h Handler, cmd *Command) error {
	req, err := s.streamRequest(cmd)
	if err == nil {
		s.mu.Lock()
		_, playing := s.playing[cmd.StreamID]
		busy := s.publishers[cmd.StreamID] != nil || playing
		s.mu.Unlock()
		if busy || cmd.StreamID == 0 {
			err = Status{"error", CodePublishBadName, "stream id already in use"}
		}
	}
	var p Publisher
	if err == nil {
		p, err = h.Publish(ctx, s, req)
	}
	if err != nil {
		st := asStatus(err, CodePublishBadName)
		s.Conn.cfg.Metrics.commandRefused("publish", st.Code)
		s.Log.Info("publish refused", "stream", withoutQuery(cmd.Arg(0)), "code", st.Code, "reason", st.Description)
		_ = s.Conn.Send(StatusMessage(cmd.StreamID, st))
		s.Conn.CloseAfterFlush(st)
		return nil
	}
	s.Conn.cfg.Metrics.commandAccepted("publish")
	s.Conn.ReadInbound() // this is the loop's goroutine, between two messages
	s.mu.Lock()
	s.publishers[cmd.StreamID] = p
	s.mu.Unlock()
	s.Log.Info("publishing", "stream", req.Name)
	return s.Conn.Send(StatusMessage(cmd.StreamID, Status{"status", CodePublishStart, req.App + "/" + req.Name + " is now published"}))
}

func (s *Session) play(ctx context.Context, h Handler, cmd *Command) error {
	req, err := s.streamRequest(cmd)
	if err == nil && cmd.StreamID == 0 {
		err = Status{"error", CodePlayFailed, "play on stream 0"}
	}
	s.mu.Lock()
	leaving := s.leaving
	s.mu.Unlock()
	if err == nil && leaving {
		err = Status{"error", CodePlayFailed, "server going away: play elsewhere"}
	}
	var src MediaSource
	if err == nil {
		src, err = h.Play(ctx, s, req)
	}
	if err != nil {
		st := asStatus(err, CodePlayFailed)
		s.Conn.cfg.Metrics.commandRefused("play", st.Code)
		s.Log.Info("play refused", "stream", withoutQuery(cmd.Arg(0)), "code", st.Code, "reason", st.Description)
		return s.Conn.Send(StatusMessage(cmd.StreamID, st))
	}
	s.Conn.cfg.Metrics.commandAccepted("play")
	id := cmd.StreamID
	name := req.Name
	s.mu.Lock()
	oldName, old := s.playing[id]
	s.playing[id] = name
	s.mu.Unlock()
	if old {
		s.Conn.Unbind(id)
		s.viewerClosed(oldName, ReasonStopped, nil)
	}
	c := s.Conn
	c.SetReadTimeout(0) // a viewer may stay silent; dead peers show up as write timeouts
	_ = c.Send(UserControlMessage(EventStreamIsRecorded, id))
	_ = c.Send(UserControlMessage(EventStreamBegin, id))
	_ = c.Send(StatusMessage(id, Status{"status", CodePlayReset, "Playing and resetting " + req.Name}))
	_ = c.Send(StatusMessage(id, Status{"status", CodePlayStart, "Started playing " + req.Name}))
	_ = c.Send(DataMessage(id, "|RtmpSampleAccess", true, true))
	c.Bind(id, src, func(e av.Event) []Message {
		switch e {
		case av.EventUnpublish:
			return []Message{
				StatusMessage(id, Status{"status", CodePlayUnpublishNotify, name + " is now unpublished"}),
				UserControlMessage(EventStreamEOF, id),
			}
		case av.EventPublish:
			return []Message{
				UserControlMessage(EventStreamBegin, id),
				StatusMessage(id, Status{"status", CodePlayPublishNotify, name + " is now published"}),
			}
		}
		return nil
	}, func(err error) []Message {
		// The connection closes with err once this is written; the close
		// is logged and counted then (endViewers).
		return []Message{StatusMessage(id, asStatus(err, CodePlayInsufficientBW))}
	})
	s.Log.Info("playing", "stream", name)
	return nil
}
