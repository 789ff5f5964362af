package httpswarm

import (
	"math"
	"time"
)

// ewma is an exponentially weighted moving average whose weights are
// seconds of transfer, corrected for its zero start.
type ewma struct {
	halfLife float64 // seconds
	est      float64
	weight   float64
}

func (e *ewma) add(weight, v float64) {
	a := math.Exp2(-weight / e.halfLife)
	e.est = v*(1-a) + e.est*a
	e.weight += weight
}

func (e *ewma) value() float64 {
	if e.weight == 0 {
		return 0
	}
	return e.est / (1 - math.Exp2(-e.weight/e.halfLife))
}

// estimator is a player's throughput estimate in bits per second: the
// smaller of a fast and a slow average of the media downloads.
type estimator struct {
	fast, slow ewma
	n          int
}

func newEstimator() *estimator {
	return &estimator{fast: ewma{halfLife: 2}, slow: ewma{halfLife: 8}}
}

// minSampleBytes keeps tiny downloads (an audio part) out of the estimate:
// their time is all round trip.
const minSampleBytes = 4 << 10

// add records a download of n bytes that took d from its first byte to
// its last.
func (e *estimator) add(n int64, d time.Duration) {
	if n < minSampleBytes {
		return
	}
	sec := max(d.Seconds(), 50e-6)
	bps := float64(n) * 8 / sec
	e.fast.add(sec, bps)
	e.slow.add(sec, bps)
	e.n++
}

func (e *estimator) bps() float64 {
	if e.n == 0 {
		return 0
	}
	return min(e.fast.value(), e.slow.value())
}

// abr picks a rung from the estimate with hysteresis: it moves up only to a
// rung whose bandwidth fits in Up × estimate, down as soon as the current
// rung's exceeds Down × estimate (or the player stalled), and holds a rung
// at least Hold between moves up.
type abr struct {
	up, down float64
	hold     time.Duration
	last     time.Time // of the last switch
}

// choose returns the rung to play next; bws ascend.
func (a *abr) choose(cur int, bws []int, est float64, stalled bool, now time.Time) int {
	if est <= 0 || len(bws) < 2 {
		return cur
	}
	if float64(bws[cur]) > a.down*est || stalled && cur > 0 && float64(bws[cur]) > a.up*est {
		next := 0
		for i := cur - 1; i > 0; i-- {
			if float64(bws[i]) <= a.up*est {
				next = i
				break
			}
		}
		if next < cur {
			a.last = now
			return next
		}
		return cur
	}
	if now.Sub(a.last) < a.hold {
		return cur
	}
	next := cur
	for i := cur + 1; i < len(bws); i++ {
		if float64(bws[i]) <= a.up*est {
			next = i
		}
	}
	if next != cur {
		a.last = now
	}
	return next
}
