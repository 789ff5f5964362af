package dashboard

import (
	"net/http"
	"time"
)

// events serves GET /api/v1/events: a server-sent event stream. Each
// "mesh" event carries a Snapshot as JSON; it is sent at once and then
// whenever the snapshot changes, with a comment line as a heartbeat when
// nothing changed for a while. Every stream shares the same encoded
// snapshot, so a change costs one encoding however many watch.
func (d *Dashboard) events(w http.ResponseWriter, r *http.Request) {
	if n := d.clients.Add(1); n > int64(d.cfg.MaxClients) {
		d.clients.Add(-1)
		w.Header().Set("Retry-After", "10")
		http.Error(w, "too many dashboard clients", http.StatusServiceUnavailable)
		return
	}
	defer d.clients.Add(-1)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(parts ...[]byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(d.cfg.WriteTimeout))
		for _, p := range parts {
			if _, err := w.Write(p); err != nil {
				return false
			}
		}
		return rc.Flush() == nil
	}
	retry := []byte("retry: 2000\n\n")
	head, tail, ping := []byte("event: mesh\ndata: "), []byte("\n\n"), []byte(": ping\n\n")
	s := d.cur.Load()
	if !write(retry, head, s.data, tail) {
		return
	}
	hb := time.NewTicker(d.cfg.Heartbeat)
	defer hb.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-d.done:
			return
		case <-s.changed:
			s = d.cur.Load()
			if !write(head, s.data, tail) {
				return
			}
			hb.Reset(d.cfg.Heartbeat)
		case <-hb.C:
			if !write(ping) {
				return
			}
		}
	}
}
