package rtmp

import (
	"strings"
	"sync"
)

// Sessions is the set of a server's open sessions (ConnConfig.Sessions). A
// nil *Sessions holds nothing.
type Sessions struct {
	mu sync.Mutex
	m  map[*Session]struct{}
}

// NewSessions returns an empty set.
func NewSessions() *Sessions { return &Sessions{m: map[*Session]struct{}{}} }

func (ss *Sessions) add(s *Session) {
	if ss != nil {
		ss.mu.Lock()
		ss.m[s] = struct{}{}
		ss.mu.Unlock()
	}
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
// (NetStream.Play.Failed).
func (s *Session) Leave(n LeaveNotice) int {
	s.mu.Lock()
	req := s.Connect
	playing := s.playing
	s.playing = map[uint32]string{}
	s.leaving = true
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
