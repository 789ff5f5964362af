package httpswarm

import (
	"math"
	"sort"
	"time"

	"github.com/relaymesh/relaymesh/loadtest/proc"
)

// ClientStats is what one client saw.
type ClientStats struct {
	ID        int  `json:"id"`
	Throttled bool `json:"throttled"`
	// Started: playback began (every track had its first media).
	Started      bool    `json:"started"`
	FirstMediaMs float64 `json:"first_media_ms"` // from the client's start to its first segment or part
	StartupMs    float64 `json:"startup_ms"`     // to the start of playback
	PlayedS      float64 `json:"played_s"`       // from the start of playback to the end of the run
	Stalls       int     `json:"stalls"`
	StallS       float64 `json:"stall_s"`
	MaxStallS    float64 `json:"max_stall_s"`
	SwitchesUp   int     `json:"switches_up"`
	SwitchesDown int     `json:"switches_down"`
	Rendition    string  `json:"rendition"` // at the end
	// MediaS is the media time downloaded per rendition, seconds.
	MediaS       map[string]float64 `json:"media_s_by_rendition"`
	Requests     map[string]int     `json:"requests"`
	Bytes        int64              `json:"bytes"`
	Errors       map[string]int     `json:"errors,omitempty"`
	LastError    string             `json:"last_error,omitempty"`
	Resyncs      int                `json:"resyncs"` // fell out of the playlist window and rejoined the edge
	EstimateKbps float64            `json:"estimate_kbps"`
	// LiveLagS is how far the playhead was behind the live edge at the end
	// (HLS: the edge the playlists listed; DASH: availabilityStartTime plus
	// the presentation time).
	LiveLagS *float64 `json:"live_lag_s,omitempty"`
}

// Dist is a distribution in a report.
type Dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func dist(v []float64) Dist {
	if len(v) == 0 {
		return Dist{}
	}
	sort.Float64s(v)
	return Dist{N: len(v), P50: percentile(v, 0.5), P95: percentile(v, 0.95), P99: percentile(v, 0.99), Max: v[len(v)-1]}
}

func percentile(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Class aggregates all, the normal or the throttled clients.
type Class struct {
	Clients        int     `json:"clients"`
	Started        int     `json:"started"`
	StartupMs      Dist    `json:"startup_ms"`
	FirstMediaMs   Dist    `json:"first_media_ms"`
	LiveLagS       Dist    `json:"live_lag_s"` // at the end of the run
	Stalls         int     `json:"stalls"`
	ClientsStalled int     `json:"clients_stalled"`
	StallS         float64 `json:"stall_s"`
	MaxStallS      float64 `json:"max_stall_s"`
	// StallRatio is stalled time over the time since playback started.
	StallRatio      float64 `json:"stall_ratio"`
	SwitchesUp      int     `json:"switches_up"`
	SwitchesDown    int     `json:"switches_down"`
	ClientsSwitched int     `json:"clients_switched"`
	MeanMbps        float64 `json:"mean_mbps"` // per client
	// FinalRendition counts the clients by the rendition they ended on.
	FinalRendition map[string]int `json:"final_rendition"`
	// MediaS is the media time downloaded per rendition, seconds.
	MediaS  map[string]float64 `json:"media_s_by_rendition"`
	Resyncs int                `json:"resyncs"`
}

// Report summarises a run.
type Report struct {
	Proto        string    `json:"proto"`
	URL          string    `json:"url"`
	LowLatency   string    `json:"low_latency"`
	Clients      int       `json:"clients"`
	Throttled    int       `json:"throttled"`
	ThrottleKbps int       `json:"throttle_kbps"`
	Duration     float64   `json:"duration_s"`
	Ramp         float64   `json:"ramp_s"`
	Started      time.Time `json:"started"`
	Elapsed      float64   `json:"elapsed_s"`
	// ViewerMinutes is the playing time of all clients (from the start of
	// playback), the denominator of the server's CPU per viewer-minute.
	ViewerMinutes float64 `json:"viewer_minutes"`

	All            Class `json:"all"`
	Normal         Class `json:"normal"`
	ThrottledClass Class `json:"throttled_clients"`

	Requests map[string]int `json:"requests"`
	Bytes    int64          `json:"bytes"`
	Mbps     float64        `json:"mbps"`
	// Errors counts failed requests and events by kind: http_NNN, timeout,
	// refused, reset, eof, parse, too_large, ended, other.
	Errors       map[string]int `json:"errors"`
	ErrorSamples []string       `json:"error_samples,omitempty"`

	Server    *proc.Server  `json:"server,omitempty"`
	PerClient []ClientStats `json:"per_client,omitempty"`
}

func (c *Class) add(s *ClientStats, dur float64, startup, first, lag *[]float64) {
	c.Clients++
	if s.LiveLagS != nil {
		*lag = append(*lag, *s.LiveLagS)
	}
	if s.Started {
		c.Started++
		*startup = append(*startup, s.StartupMs)
	}
	if s.FirstMediaMs > 0 {
		*first = append(*first, s.FirstMediaMs)
	}
	c.Stalls += s.Stalls
	if s.Stalls > 0 {
		c.ClientsStalled++
	}
	c.StallS += s.StallS
	c.MaxStallS = math.Max(c.MaxStallS, s.MaxStallS)
	c.StallRatio += s.PlayedS // divided at the end
	c.SwitchesUp += s.SwitchesUp
	c.SwitchesDown += s.SwitchesDown
	if s.SwitchesUp+s.SwitchesDown > 0 {
		c.ClientsSwitched++
	}
	if dur > 0 {
		c.MeanMbps += float64(s.Bytes) * 8 / 1e6 / dur
	}
	if s.Rendition != "" {
		c.FinalRendition[s.Rendition]++
	}
	for k, v := range s.MediaS {
		c.MediaS[k] += v
	}
	c.Resyncs += s.Resyncs
}

func (c *Class) finish(startup, first, lag []float64) {
	c.StartupMs, c.FirstMediaMs, c.LiveLagS = dist(startup), dist(first), dist(lag)
	if c.StallRatio > 0 {
		c.StallRatio = c.StallS / c.StallRatio
	}
	if c.Clients > 0 {
		c.MeanMbps /= float64(c.Clients)
	}
}

func newClass() Class {
	return Class{FinalRendition: map[string]int{}, MediaS: map[string]float64{}}
}

func summarize(cfg *Config, clients []*client, elapsed time.Duration) *Report {
	r := &Report{Proto: cfg.Proto, URL: cfg.URL, LowLatency: cfg.LowLatency, Clients: len(clients),
		Throttled: cfg.Throttled, ThrottleKbps: cfg.ThrottleKbps, Duration: cfg.Duration.Seconds(), Ramp: cfg.Ramp.Seconds(),
		Started: time.Now().Add(-elapsed), Elapsed: elapsed.Seconds(),
		All: newClass(), Normal: newClass(), ThrottledClass: newClass(),
		Requests: map[string]int{}, Errors: map[string]int{}}
	var su, fm, lg [3][]float64
	for _, c := range clients {
		c.mu.Lock()
		s := c.st
		c.mu.Unlock()
		r.PerClient = append(r.PerClient, s)
		r.All.add(&s, cfg.Duration.Seconds(), &su[0], &fm[0], &lg[0])
		if s.Throttled {
			r.ThrottledClass.add(&s, cfg.Duration.Seconds(), &su[2], &fm[2], &lg[2])
		} else {
			r.Normal.add(&s, cfg.Duration.Seconds(), &su[1], &fm[1], &lg[1])
		}
		r.ViewerMinutes += s.PlayedS / 60
		for k, v := range s.Requests {
			r.Requests[k] += v
		}
		for k, v := range s.Errors {
			r.Errors[k] += v
		}
		if s.LastError != "" && len(r.ErrorSamples) < 10 {
			r.ErrorSamples = append(r.ErrorSamples, s.LastError)
		}
		r.Bytes += s.Bytes
	}
	r.All.finish(su[0], fm[0], lg[0])
	r.Normal.finish(su[1], fm[1], lg[1])
	r.ThrottledClass.finish(su[2], fm[2], lg[2])
	if elapsed > 0 {
		r.Mbps = float64(r.Bytes) * 8 / 1e6 / elapsed.Seconds()
	}
	return r
}
