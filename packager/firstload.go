package packager

import "time"

// A low-latency player's first load of a media playlist is a request
// without _HLS_msn; its later ones are blocking reloads. A plain poller
// (a player without LL-HLS support, a CDN filling its cache) asks without
// _HLS_msn every time. freshen's wait is for the first kind only: a
// client's request without _HLS_msn counts as a first load unless the
// same client (viewerKey: its session or token, else its address) asked
// for that playlist without _HLS_msn within firstLoadWindow. Many players
// behind one address (a NAT, a CDN) then look like one poller, and get
// their playlists at once, as before freshen.

// firstLoadWindow is how recent a client's previous request without
// _HLS_msn must be for the next one to be a poll: longer than the reload
// interval of a poller (a target duration, half of one when unchanged).
const firstLoadWindow = 6 * time.Second

// maxFirstLoads bounds the clients remembered; beyond, requests count as
// polls (no wait).
const maxFirstLoads = 4096

type pollKey struct {
	client string
	rend   Rendition
}

// firstLoad reports whether client's request for rendition r's playlist
// without _HLS_msn at now is its first in firstLoadWindow, and records it;
// st.mu is held.
func (st *stream) firstLoad(client string, r Rendition, now time.Time) bool {
	if st.polls == nil {
		st.polls = map[pollKey]time.Time{}
	}
	k := pollKey{client, r}
	last, seen := st.polls[k]
	if !seen && len(st.polls) >= maxFirstLoads {
		for pk, t := range st.polls {
			if now.Sub(t) > firstLoadWindow {
				delete(st.polls, pk)
			}
		}
		if len(st.polls) >= maxFirstLoads {
			return false
		}
	}
	st.polls[k] = now
	return !seen || now.Sub(last) > firstLoadWindow
}
