package sim

import (
	"encoding/csv"
	"io"
	"strconv"
)

// WriteCSV writes the timeline as CSV, one row a sample: the simulated
// second, viewers watching and waiting, relays open and those the oracle's
// placement needs, the mean stretch and the oracle's, and both relay counts
// summed over time so far (relay-seconds, each sample held until the next).
// It is the report's charts as numbers, for a spreadsheet or a plot.
func (tl *Timeline) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"t", "viewers", "waiting", "relays", "oracle_relays", "stretch", "oracle_stretch", "relay_seconds", "oracle_relay_seconds"})
	var rs, os, prevT float64
	var prevRelays, prevOracle float64
	f := func(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }
	for _, p := range tl.Points {
		dt := p.T - prevT
		rs += prevRelays * dt
		os += prevOracle * dt
		prevT, prevRelays, prevOracle = p.T, float64(p.Relays), p.OracleRelays
		var v int64
		for _, n := range p.Viewers {
			v += n
		}
		_ = cw.Write([]string{f(p.T, 0), strconv.FormatInt(v, 10), strconv.FormatInt(p.Waiting, 10),
			strconv.Itoa(p.Relays), f(p.OracleRelays, 1), f(p.Stretch, 3), f(p.OracleStretch, 3), f(rs, 0), f(os, 0)})
	}
	cw.Flush()
	return cw.Error()
}
