package rtmp

import (
	"strings"
	"sync"
)

// Sessions is the set of a server's open sessions (ConnConfig.Sessions). A
// nil *Sessions holds nothing.
type Sessions struct {
	mu    sync.Mutex
	m     map[*Session]struct{}
	leave *LeaveNotice // set by Leave: sessions added later are refused at connect
}

// NewSessions returns an empty set.
func NewSessions() *Sessions { return &Sessions{m: map[*Session]struct{}{}} }

func (ss *Sessions) add(s *Session) {
	if ss != nil {
		ss.mu.Lock()
		ss.m[s] = struct{}{}
		if ss.leave != nil {
			s.leaving, s.notice = true, *ss.leave // s is not shared yet
		}
		ss.mu.Unlock()
	}
}

// Leave tells every open session but the skipped ones to leave
// (Session.Leave), and has sessions that open from now on refused at
// connect, with the notice's redirect. It reports how many streams it
// stopped.
func (ss *Sessions) Leave(n LeaveNotice, skip func(*Session) bool) int {
	if ss == nil {
		return 0
	}
	ss.mu.Lock()
	ss.leave = &n
	ss.mu.Unlock()
	told := 0
	ss.Each(func(s *Session) {
		if skip == nil || !skip(s) {
			told += s.Leave(n)
		}
	})
	return told
}

func (ss *Sessions) remove(s *Session) {
	if ss != nil {
		ss.mu.Lock()
		delete(ss.m, s)
		ss.mu.Unlock()
	}
}

// Each calls f for every open session (not under the set's lock).
func (ss *Sessions) Each(f func(*Session)) {
	if ss == nil {
		return
	}
	ss.mu.Lock()
	all := make([]*Session, 0, len(ss.m))
	for s := range ss.m {
		all = append(all, s)
	}
	ss.mu.Unlock()
	for _, s := range all {
		f(s)
	}
}

// LeaveNotice is what a server going away tells its players.
type LeaveNotice struct {
	// Description says why, e.g. "relay r1 is draining".
	Description string
	// Redirect, when set, returns where the players of app/name should go:
	// an http(s) URL (a redirector's /play) or an rtmp URL (a server that
	// plays the stream); "" for nowhere.
	Redirect func(app, name string) string
	// ConnectRedirect, when set, returns the connection URL (rtmp://host/app)
	// that a client connecting to app is sent to: the FMS redirect of a
	// connect (NetConnection.Connect.Rejected, ex.code 302, ex.redirect).
	ConnectRedirect func(app string) string
}

// reconnectCap is the Reconnect bit of the connect command's capsEx
// (Enhanced RTMP v2): the client follows NetConnection.Connect.ReconnectRequest.
const reconnectCap = 0x01

// Leave tells the session's players that the server is going away, and
// stops their media: each playing stream gets NetStream.Play.UnpublishNotify
// and StreamEOF, then the connection gets an onStatus
// NetConnection.Connect.Closed whose description names where to go, with
// the redirect also in ex.redirect (ex.code 302, as the FMS redirect of a
// connect) and in redirect. A client that announced Enhanced RTMP's
// reconnect capability first gets NetConnection.Connect.ReconnectRequest,
// with tcUrl when the redirect is an rtmp URL. The connection stays open:
// the server closes it when the peer has not left in time. Each stream's
// end is logged and counted with reason drain. Leave reports how many
// streams it stopped. Later plays on the session are refused
// (NetStream.Play.Failed), and a connect not made yet gets
// NetConnection.Connect.Rejected with the connect redirect (see
// rejectConnect).
func (s *Session) Leave(n LeaveNotice) int {
	s.mu.Lock()
	req := s.Connect
	playing := s.playing
	s.playing = map[uint32]string{}
	s.leaving, s.notice = true, n
	s.mu.Unlock()
	if req == nil || len(playing) == 0 {
		return 0
	}
	targets := make(map[uint32]string, len(playing))
	target := "" // for the connection: that of any of its streams
	for id, name := range playing {
		if n.Redirect != nil {
			targets[id] = n.Redirect(req.App, name)
			target = max(target, targets[id])
		}
	}
	desc := n.Description
	if target != "" {
		desc += ": reconnect through " + target
	}
	if caps, _ := req.Object["capsEx"].(float64); int(caps)&reconnectCap != 0 {
		rr := map[string]any{"level": "status", "code": CodeReconnectRequest, "description": desc}
		if strings.HasPrefix(target, "rtmp://") || strings.HasPrefix(target, "rtmps://") {
			if i := strings.LastIndexByte(target, '/'); i > len("rtmps://") {
				rr["tcUrl"] = target[:i] // the stream name is played again there
			}
		}
		_ = s.Conn.SendCommand(0, "onStatus", 0.0, nil, rr)
	}
	for id, name := range playing {
		d := n.Description
		if targets[id] != "" {
			d += ": play " + name + " again through " + targets[id]
		}
		s.Conn.Unbind(id)
		_ = s.Conn.Send(StatusMessage(id, Status{"status", CodePlayUnpublishNotify, d}))
		_ = s.Conn.Send(UserControlMessage(EventStreamEOF, id))
		s.viewerClosed(name, ReasonDrain, nil)
	}
	info := map[string]any{"level": "status", "code": CodeConnectClosed, "description": desc}
	if target != "" {
		info["redirect"] = target
		info["ex"] = map[string]any{"code": 302.0, "redirect": target}
	}
	_ = s.Conn.SendCommand(0, "onStatus", 0.0, nil, info)
	return len(playing)
}

// rejectConnect answers the connect of a session told to leave:
// NetConnection.Connect.Rejected, with ex.code 302 and ex.redirect (and
// redirect) naming the connection URL to use instead when there is one, as
// FMS's application.redirectConnection does.
func (s *Session) rejectConnect(txid float64, app string, n LeaveNotice) {
	desc := n.Description
	info := map[string]any{"level": "error", "code": CodeConnectRejected}
	if n.ConnectRedirect != nil {
		if u := n.ConnectRedirect(app); u != "" {
			desc += ": connect to " + u
			info["redirect"] = u
			info["ex"] = map[string]any{"code": 302.0, "redirect": u}
		}
	}
	info["description"] = desc
	s.Conn.cfg.Metrics.commandRefused("connect", CodeConnectRejected)
	s.Log.Info("connect refused", "app", app, "code", CodeConnectRejected, "reason", desc)
	_ = s.Conn.SendCommand(0, "_error", txid, nil, info)
	s.Conn.CloseAfterFlush(WithReason(ReasonDrain, ErrServerClosing))
}
