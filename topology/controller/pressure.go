package controller

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/relaymesh/relaymesh/topology/distance"
	"github.com/relaymesh/relaymesh/topology/graph"
)

// Scaling per (stream, location) from where the unserved demand is. The
// region scaler sees the load of the relays a region has; a crowd whose
// own location is full is served from elsewhere (a neighbour, another
// region) and its location never looks busier. So every request from
// vertex v is also charged to the location that should serve it: the
// nearest relay-pool location of v that hosts the stream and still has a
// free server, skipping locations whose servers are all down and
// stopping at locations with room. A location has room while its
// relays' viewers at the last report, plus the requests taken as served
// there since, are below the high watermark of their capacity (serving
// and starting relays alike: a starting relay's room is committed to the
// viewers it will take once it serves). Otherwise the request was served
// farther away: it adds one viewer to the location's pressure. Pressure
// decays with the demand half-life; when it reaches Config.Pressure (a
// half by default) of one relay's worth of viewers (High × capacity), a
// relay opens there (from its own pool, never the reserve) and the
// pressure drops by that much. The new relay's room then takes the next
// requests, so the relays opened follow the unserved demand: about one
// per relay's worth of it, the first after half of one instead of a
// whole. A location the stream is not hosted at is the demand bonus's
// business.

// nearCandidates is how many nearest pool locations per vertex are kept.
const nearCandidates = 8

type pressureCell struct {
	value float64
	at    int64
}

type locLoad struct {
	viewers  float64 // reported by its relays at the last tick
	capacity float64 // of its relays not draining, starting included
	perRelay float64 // one relay's capacity there
	pending  float64 // requests taken as served there since the last tick
}

func (c *Controller) initPressure() {
	c.press = map[[2]int]*pressureCell{}
	c.locs = map[[2]int]*locLoad{}
	c.free = map[[2]int]bool{}
	hl := c.cfg.Demand.HalfLife
	if hl <= 0 {
		hl = time.Minute
	}
	c.lnHalf = math.Ln2 / float64(hl)
	c.pool = make([]bool, c.table.NumDests())
	c.poolSrv = make([][]int, c.table.NumDests())
	for i, s := range c.g.Servers() {
		if s.Role == graph.RoleRelay && c.destOf[i] >= 0 {
			c.pool[c.destOf[i]] = true
			c.poolSrv[c.destOf[i]] = append(c.poolSrv[c.destOf[i]], i)
		}
	}
	if c.g.NumVertices() > maxNearCache {
		return // nearest pools computed per request (nearPools)
	}
	c.near = make([][]int, c.g.NumVertices())
	for v := range c.near {
		c.near[v] = c.nearPools(graph.VertexID(v), nil)
	}
}

// nearPools appends to dst the nearest relay-pool destinations of v,
// nearest first, at most nearCandidates.
func (c *Controller) nearPools(v graph.VertexID, dst []int) []int {
	row := c.table.Row(v)
	js := dst[:0]
	for j, d := range row {
		if c.pool[j] && d != distance.Inf {
			js = append(js, j)
		}
	}
	sort.SliceStable(js, func(a, b int) bool { return row[js[a]] < row[js[b]] })
	if len(js) > nearCandidates {
		js = js[:nearCandidates]
	}
	return js
}

// pressure charges n requests of stream s from v to the location that
// should serve them, and opens a relay there when it is due.
func (c *Controller) pressure(now time.Time, s *stream, v graph.VertexID, n float64, dst []Decision) []Decision {
	if !(n > 0) || math.IsInf(n, 0) {
		return dst
	}
	var js []int
	if c.near != nil {
		js = c.near[v]
	} else {
		c.nearBuf = c.nearPools(v, c.nearBuf)
		js = c.nearBuf
	}
	for _, j := range js {
		k := [2]int{s.id, j}
		l := c.locs[k]

		if l == nil || l.capacity == 0 {
			if !c.poolUp(j) {
				continue // every server there is down: the next location
			}
			return dst // not hosted there: the demand bonus's business
		}
		high := c.high()
		if l.viewers+l.pending < high*l.capacity {
			l.pending += n
			return dst // room there: the request was served there
		}
		free, ok := c.free[k]
		if !ok {
			free = c.scaler.Free(s.id, c.table.Dest(j))
			c.free[k] = free
		}
		if !free {
			continue // full and nothing left to open: the next location
		}
		p := c.press[k]
		if p == nil {
			p = &pressureCell{}
			c.press[k] = p
		}
		ns := now.UnixNano()
		if p.value > 0 && ns > p.at {
			p.value *= math.Exp(-float64(ns-p.at) * c.lnHalf)
		}
		p.value += n
		p.at = ns
		worth := high * l.perRelay * c.cfg.Pressure
		if math.IsInf(worth, 1) || p.value < worth {
			return dst
		}
		loc := c.table.Dest(j)
		why := fmt.Sprintf("%.0f requests from around %s served farther away while its relays (%.0f viewers and %.0f requests since their last report over %.0f capacity, starting included) are above the high watermark: %.2g of one relay's worth (%.0f)",
			p.value, c.g.Location(loc).ID, l.viewers, l.pending, l.capacity, c.cfg.Pressure, worth)
		d, ok := c.scaler.OpenInPool(now, s.id, loc, why)
		if !ok {
			c.free[k] = false
			return dst
		}
		p.value -= worth
		l.capacity += l.perRelay
		return c.open(now, s, d, dst)
	}
	return dst
}

// high is the scaler's high watermark.
func (c *Controller) high() float64 { return c.scaler.High() }

// measureLocations refreshes, at a tick, every (stream, location)'s load
// and capacity from the relays and their last statuses.
func (c *Controller) measureLocations() {
	clear(c.locs)
	clear(c.free)
	for _, s := range c.byID {
		for srv, r := range s.relays {
			j := c.destOf[srv]
			if j < 0 || r.State == Draining {
				continue
			}
			k := [2]int{s.id, j}
			l := c.locs[k]
			if l == nil {
				l = &locLoad{}
				c.locs[k] = l
			}
			cp := c.scaler.Capacity(srv, s.id)
			l.capacity += cp
			l.perRelay = max(l.perRelay, cp)
			l.viewers += c.viewers(srv, s.name)
		}
	}
}

// poolUp reports whether a relay server of destination j is not marked
// down.
func (c *Controller) poolUp(j int) bool {
	for _, i := range c.poolSrv[j] {
		if !c.down[i] {
			return true
		}
	}
	return false
}
