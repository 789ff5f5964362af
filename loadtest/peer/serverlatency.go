package peer

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The relay's own measure of what it adds per hop: its histogram of the
// time from a frame's arrival in the hub to the return of the writev that
// handed it to the kernel (sampled viewers), read from its /metrics before
// and after the steady window; the difference is the window's.

// writeLatencyMetric is the relay's histogram (internal/rtmp).
const writeLatencyMetric = "relaymesh_rtmp_write_latency_seconds"

// histogram is a cumulative Prometheus histogram: counts by upper bound (s).
type histogram map[float64]float64

// histograms are a histogram's series by the value of one label ("" for
// the sum of all).
type histograms map[string]histogram

// scrapeHistogram reads the buckets of name from a Prometheus text page, by
// the value of label and summed.
func scrapeHistogram(ctx context.Context, url, name, label string) (histograms, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return parseHistogram(resp.Body, name, label)
}

func parseHistogram(r io.Reader, name, label string) (histograms, error) {
	hs := histograms{"": {}}
	prefix := name + "_bucket{"
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		labels, value, ok := strings.Cut(line[len(prefix):], "} ")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		le, series := math.NaN(), ""
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "le":
				le, err = strconv.ParseFloat(v, 64) // "+Inf" parses as +Inf
				if err != nil {
					le = math.NaN()
				}
			case label:
				series = v
			}
		}
		if math.IsNaN(le) {
			continue
		}
		if series != "" {
			if hs[series] == nil {
				hs[series] = histogram{}
			}
			hs[series][le] += n
		}
		hs[""][le] += n
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(hs[""]) == 0 {
		return nil, fmt.Errorf("no %s", name)
	}
	return hs, nil
}

// serverLatency is the window's figures from two scrapes, in ms: quantiles
// interpolated linearly inside a bucket (the buckets are 1–10 ms wide
// around 30 ms); Max is the upper bound of the highest bucket used.
func serverLatency(before, after histogram) LatencyStats {
	bounds := make([]float64, 0, len(after))
	for le := range after {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	cum := make([]float64, len(bounds))
	for i, le := range bounds {
		cum[i] = after[le] - before[le]
	}
	if len(cum) == 0 || cum[len(cum)-1] <= 0 {
		return LatencyStats{}
	}
	total := cum[len(cum)-1]
	q := func(p float64) float64 {
		rank := p * total
		lo, prev := 0.0, 0.0
		for i, le := range bounds {
			if cum[i] >= rank {
				if le > 1e9 { // +Inf: the last finite bound is all we know
					return lo * 1000
				}
				if cum[i] == prev {
					return le * 1000
				}
				return (lo + (le-lo)*(rank-prev)/(cum[i]-prev)) * 1000
			}
			lo, prev = le, cum[i]
		}
		return lo * 1000
	}
	st := LatencyStats{Frames: int(total), P50: q(0.50), P99: q(0.99)}
	for i := len(bounds) - 1; i >= 0; i-- {
		if i == 0 || cum[i] > cum[i-1] {
			if bounds[i] > 1e9 && i > 0 {
				st.Max = bounds[i-1] * 1000
			} else {
				st.Max = bounds[i] * 1000
			}
			break
		}
	}
	return st
}
