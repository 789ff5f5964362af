package scaling

import (
	"math"
	"time"
)

// Predictor extrapolates a load series a horizon ahead from its recent
// samples, using their first and second derivative (a least-squares
// quadratic through the last Window samples; a line with two samples). This
// is the idea of Facebook Live's load predictor: shed or add capacity
// before the overload, not after.
type Predictor struct {
	window int
	t      []float64 // seconds, ring buffer
	v      []float64
	n, pos int
	origin time.Time
}

// NewPredictor keeps the last window samples (at least 3; default 6 when
// window ≤ 0).
func NewPredictor(window int) *Predictor {
	if window <= 0 {
		window = 6
	}
	window = max(window, 3)
	return &Predictor{window: window, t: make([]float64, window), v: make([]float64, window)}
}

// Add records the load at time now. Samples must come in time order; one
// not later than the previous replaces it.
func (p *Predictor) Add(now time.Time, load float64) {
	if math.IsNaN(load) || math.IsInf(load, 0) {
		return
	}
	if p.n == 0 {
		p.origin = now
	}
	ts := now.Sub(p.origin).Seconds()
	if p.n > 0 {
		last := (p.pos - 1 + p.window) % p.window
		if ts <= p.t[last] {
			p.v[last] = load
			return
		}
	}
	p.t[p.pos], p.v[p.pos] = ts, load
	p.pos = (p.pos + 1) % p.window
	p.n = min(p.n+1, p.window)
}

// Len is the number of samples held.
func (p *Predictor) Len() int { return p.n }

// Last returns the latest sample (0 without samples).
func (p *Predictor) Last() float64 {
	if p.n == 0 {
		return 0
	}
	return p.v[(p.pos-1+p.window)%p.window]
}

// Rise is the load's change per second over the last k sample intervals
// (0 with fewer than k+1 samples).
func (p *Predictor) Rise(k int) float64 {
	if k < 1 || p.n < k+1 {
		return 0
	}
	last := (p.pos - 1 + p.window) % p.window
	prev := (p.pos - 1 - k + 2*p.window) % p.window
	dt := p.t[last] - p.t[prev]
	if dt <= 0 {
		return 0
	}
	return (p.v[last] - p.v[prev]) / dt
}

// Predict returns the load expected horizon after the latest sample
// (never negative), with the first derivative (load per second) and the
// second derivative (per second²) at the latest sample. While the latest
// sample is not above the one before, the prediction is at most the latest
// sample: a rebound is not extrapolated before it shows.
func (p *Predictor) Predict(horizon time.Duration) (load, slope, accel float64) {
	switch p.n {
	case 0:
		return 0, 0, 0
	case 1:
		return p.Last(), 0, 0
	}
	last := (p.pos - 1 + p.window) % p.window
	t0 := p.t[last]
	h := horizon.Seconds()
	if p.n == 2 {
		prev := (p.pos - 2 + p.window) % p.window
		slope = (p.v[last] - p.v[prev]) / (t0 - p.t[prev])
		return math.Max(0, p.v[last]+slope*h), slope, 0
	}
	// Least squares for v = a + b·x + c·x², x = t - t0 (x ≤ 0).
	var s [5]float64
	var r [3]float64
	for i := range p.n {
		x := p.t[i] - t0
		if p.n < p.window && i >= p.pos {
			continue
		}
		x2 := x * x
		s[0]++
		s[1] += x
		s[2] += x2
		s[3] += x2 * x
		s[4] += x2 * x2
		r[0] += p.v[i]
		r[1] += p.v[i] * x
		r[2] += p.v[i] * x2
	}
	m := [3][3]float64{{s[0], s[1], s[2]}, {s[1], s[2], s[3]}, {s[2], s[3], s[4]}}
	det := det3(m)
	if math.Abs(det) < 1e-12 {
		return p.Last(), 0, 0
	}
	var coef [3]float64
	for k := range 3 {
		mk := m
		for row := range 3 {
			mk[row][k] = r[row]
		}
		coef[k] = det3(mk) / det
	}
	a, b, c := coef[0], coef[1], coef[2]
	load = math.Max(0, a+b*h+c*h*h)
	// A curve fitted through a fall and a flat stretch bends upwards; an
	// upward prediction is trusted only while the load is actually rising.
	if prev := p.v[(p.pos-2+p.window)%p.window]; p.v[last] <= prev {
		load = math.Min(load, p.v[last])
	}
	return load, b, 2 * c
}

func det3(m [3][3]float64) float64 {
	return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
		m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
		m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
}
