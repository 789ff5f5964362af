package orchestrator

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/controller"
	"github.com/relaymesh/relaymesh/topology/graph"
)

// The leader saves the demand bonuses of the streams that received demand
// (bucket BucketDemand, one key per stream) at most every bonusSaveEvery,
// and a new leader restores them: a takeover does not make the viewers
// gathering towards a new relay start again from nothing. The writes go
// through one goroutine and a bounded queue, so a slow bus never holds up
// the leader; a stream whose write was not queued stays dirty for the next
// round.

// bonusSaveEvery is how often the dirty streams' bonuses are written.
const bonusSaveEvery = 2 * time.Second

type bonusWrite struct {
	key  string
	data []byte // nil: delete
}

// bonusSaver is the leader's part of the bonus persistence.
type bonusSaver struct {
	dirty  map[int]bool // stream ids with demand since the last save
	saved  map[int]bool // stream ids with a key in the bucket
	last   time.Time
	writes chan bonusWrite
}

func newBonusSaver() bonusSaver {
	return bonusSaver{dirty: map[int]bool{}, saved: map[int]bool{}, writes: make(chan bonusWrite, 1024)}
}

// startBonusWriter writes the queued bonuses until ctx ends.
func (st *state) startBonusWriter(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case w := <-st.bonus.writes:
				wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				var err error
				if w.data == nil {
					err = st.b.Demand.Delete(wctx, w.key)
					if errors.Is(err, jetstream.ErrKeyNotFound) {
						err = nil
					}
				} else {
					_, err = st.b.Demand.Put(wctx, w.key, w.data)
				}
				cancel()
				if err != nil && ctx.Err() == nil {
					st.o.log.Debug("demand bonuses not saved", "err", err)
				}
			}
		}
	}()
}

// saveBonuses queues the bonuses of the streams that changed since the
// last save, at most every bonusSaveEvery.
func (st *state) saveBonuses(now time.Time) {
	if len(st.bonus.dirty) == 0 || now.Sub(st.bonus.last) < bonusSaveEvery {
		return
	}
	st.bonus.last = now
	min := st.ctl.Threshold() / 100
	for id := range st.bonus.dirty {
		s := st.byID[id]
		b := bus.Bonuses{App: s.app, Name: s.name}
		st.ctl.EachBonus(now, id, min, func(v graph.VertexID, value float64, at time.Time) {
			if len(b.Cells) < bus.MaxBonusCells {
				b.Cells = append(b.Cells, bus.BonusValue{Location: st.g.Location(v).ID, Value: value, At: at.UTC()})
			}
		})
		w := bonusWrite{key: bus.StreamKey(s.app, s.name)}
		if len(b.Cells) > 0 {
			data, err := bus.Encode(b)
			if err != nil {
				delete(st.bonus.dirty, id)
				continue
			}
			w.data = data
		} else if !st.bonus.saved[id] {
			delete(st.bonus.dirty, id)
			continue
		}
		select {
		case st.bonus.writes <- w:
			delete(st.bonus.dirty, id)
			st.bonus.saved[id] = w.data != nil
		default:
			return // the queue is full: the rest next time
		}
	}
}

// restoreBonuses loads what the previous leader saved.
func (st *state) restoreBonuses(ctx context.Context) error {
	n := 0
	err := eachEntry(ctx, st.b.Demand, func(k string, value []byte) bool {
		b, err := bus.DecodeBonuses(value)
		if err != nil {
			st.o.log.Warn("skipping bad demand bonuses", "key", k, "err", err)
			return true
		}
		s := st.stream(b.App, b.Name)
		if s == nil {
			return false
		}
		for _, c := range b.Cells {
			if v, ok := st.g.Vertex(c.Location); ok {
				st.apply(ctx, controller.Event{Time: time.Now(), Kind: controller.EvBonus, Stream: b.App + "/" + b.Name,
					Vertex: v, N: c.Value, Since: c.At})
			}
		}
		st.bonus.saved[s.id] = true
		n++
		return true
	})
	if n > 0 {
		st.o.log.Info("demand bonuses restored", "streams", n)
	}
	return err
}
