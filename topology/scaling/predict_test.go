package scaling

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Unix(1_000_000, 0)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func TestPredictorByHand(t *testing.T) {
	p := NewPredictor(6)
	if l, _, _ := p.Predict(time.Second); l != 0 {
		t.Fatal("empty predictor")
	}
	p.Add(at(0), 100)
	if l, s, _ := p.Predict(10 * time.Second); l != 100 || s != 0 {
		t.Fatalf("one sample: %v %v", l, s)
	}
	p.Add(at(2), 120) // slope 10/s
	if l, s, _ := p.Predict(5 * time.Second); math.Abs(l-170) > 1e-9 || math.Abs(s-10) > 1e-9 {
		t.Fatalf("two samples: %v %v", l, s)
	}
	// v = 3t² + 2t + 1 sampled at t = 0..5: at t = 5 slope 32, accel 6;
	// at t = 7: 3·49 + 14 + 1 = 162.
	q := NewPredictor(6)
	for i := range 6 {
		x := float64(i)
		q.Add(at(x), 3*x*x+2*x+1)
	}
	l, s, a := q.Predict(2 * time.Second)
	if math.Abs(l-162) > 1e-6 || math.Abs(s-32) > 1e-6 || math.Abs(a-6) > 1e-6 {
		t.Fatalf("quadratic: load %v slope %v accel %v", l, s, a)
	}
	// Constant load predicts itself; never negative on a fall.
	c := NewPredictor(4)
	for i := range 10 {
		c.Add(at(float64(i)), 500)
	}
	if l, s, _ := c.Predict(time.Minute); math.Abs(l-500) > 1e-6 || math.Abs(s) > 1e-9 {
		t.Fatalf("constant: %v %v", l, s)
	}
	d := NewPredictor(3)
	for i := range 3 {
		d.Add(at(float64(i)), 100-float64(i)*40)
	}
	if l, _, _ := d.Predict(time.Minute); l != 0 {
		t.Fatalf("falling: %v", l)
	}
	// A sample at the same time replaces the previous one.
	d.Add(at(2), 50)
	if d.Last() != 50 || d.Len() != 3 {
		t.Fatal("replace")
	}
}

// A synthetic spike: 1,000 viewers, then from t = 60 s viewers arrive
// faster and faster (quadratic ramp). Sampled every 2 s with a 15 s
// horizon, the predictor flags the overload of a 20,000-viewer capacity
// well before the load reaches it.
func TestPredictorFlagsSpikeEarly(t *testing.T) {
	load := func(x float64) float64 {
		if x < 60 {
			return 1000
		}
		return 1000 + 40*(x-60)*(x-60)
	}
	const capacity = 20_000
	p := NewPredictor(6)
	flagged, reached := -1.0, -1.0
	for x := 0.0; x <= 200; x += 2 {
		p.Add(at(x), load(x))
		if pred, _, _ := p.Predict(15 * time.Second); pred >= capacity && flagged < 0 {
			flagged = x
		}
		if load(x) >= capacity && reached < 0 {
			reached = x
		}
	}
	if flagged < 0 || reached < 0 || reached-flagged < 10 {
		t.Fatalf("flagged at %v s, capacity reached at %v s: want at least 10 s warning", flagged, reached)
	}
	t.Logf("overload flagged at t=%vs, reached at t=%vs", flagged, reached)
}

// Through the kink where a ramp starts, a quadratic fit's slope at the end
// is well above the ramp's; Rise is the ramp's own.
func TestRiseFollowsARampNotTheFit(t *testing.T) {
	p := NewPredictor(6)
	t0 := time.Unix(0, 0)
	loads := []float64{0, 0, 0, 100, 200, 300} // flat, then +50/s (samples 2 s apart)
	for i, v := range loads {
		p.Add(t0.Add(time.Duration(2*i)*time.Second), v)
	}
	_, slope, accel := p.Predict(10 * time.Second)
	if accel <= 0 || slope <= 60 {
		t.Fatalf("fit slope %.1f accel %.2f: expected the fit to overshoot the ramp", slope, accel)
	}
	if r := p.Rise(2); r != 50 {
		t.Fatalf("Rise(2) = %v, want 50", r)
	}
	if r := p.Rise(1); r != 50 {
		t.Fatalf("Rise(1) = %v, want 50", r)
	}
	if r := p.Rise(6); r != 0 {
		t.Fatalf("Rise beyond the samples = %v, want 0", r)
	}
}
