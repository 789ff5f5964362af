package sim

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
)

// Chart geometry: the plot area inside margins for the axes' labels.
const (
	chartW, chartH   = 900.0, 240.0
	marginL, marginB = 64.0, 36.0
	marginT, marginR = 10.0, 16.0
	plotW, plotH     = chartW - marginL - marginR, chartH - marginT - marginB
)

var (
	regionColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}
	policyColors = map[string]string{"controller": "#1f77b4", "static": "#ff7f0e", "load-only": "#2ca02c", "oracle": "#555"}
)

type reportSeries struct {
	Name, Color, Dash, Points string
}

type reportTick struct {
	Pos   float64
	Label string
}

type reportChart struct {
	Title, YLabel string
	Series        []reportSeries
	XTicks        []reportTick
	YTicks        []reportTick
}

// niceStep is a 1, 2 or 5 × 10^k step giving about n ticks up to vmax.
func niceStep(vmax float64, n int) float64 {
	if vmax <= 0 {
		return 1
	}
	raw := vmax / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func tickLabel(v float64) string {
	switch {
	case v >= 1e6:
		return trimFloat(v/1e6) + "M"
	case v >= 1e4:
		return trimFloat(v/1e3) + "k"
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}

type line struct {
	name, color, dash string
	tl                *Timeline
	value             func(p TimePoint) float64
}

// chartOf draws lines over a shared time axis; ymin > 0 starts the y axis
// there (stretch starts at 1).
func chartOf(title, ylabel string, tmax, ymin float64, lines []line) reportChart {
	c := reportChart{Title: title, YLabel: ylabel}
	vmax := ymin
	for _, l := range lines {
		for _, p := range l.tl.Points {
			vmax = max(vmax, l.value(p))
		}
	}
	if vmax <= ymin {
		vmax = ymin + 1
	}
	step := niceStep(vmax-ymin, 5)
	top := ymin + math.Ceil((vmax-ymin)/step)*step
	y := func(v float64) float64 { return marginT + plotH - (v-ymin)/(top-ymin)*plotH }
	for v := ymin; v <= top+step/2; v += step {
		c.YTicks = append(c.YTicks, reportTick{Pos: y(v), Label: tickLabel(v)})
	}
	xstep := niceStep(tmax/60, 10) * 60 // in minutes
	for t := 0.0; t <= tmax+1e-9; t += xstep {
		c.XTicks = append(c.XTicks, reportTick{Pos: marginL + t/tmax*plotW, Label: tickLabel(t/60) + " min"})
	}
	for _, l := range lines {
		var b strings.Builder
		for _, p := range l.tl.Points {
			fmt.Fprintf(&b, "%.1f,%.1f ", marginL+p.T/tmax*plotW, y(max(l.value(p), ymin)))
		}
		c.Series = append(c.Series, reportSeries{Name: l.name, Color: l.color, Dash: l.dash, Points: b.String()})
	}
	return c
}

// WriteHTML writes a self-contained HTML report of a scorecard: the table
// of every policy's figures, the goals, and SVG charts with axes — mean
// stretch, waiting viewers, open relays and utilisation over time for the
// controller, the baselines and the oracle on the same axes, then viewers
// and serving servers per region for the controller.
func WriteHTML(w io.Writer, card *Scorecard) error {
	tls := card.Timelines()
	if len(tls) == 0 || tls[0] == nil {
		return fmt.Errorf("sim: report without timelines")
	}
	tmax := 1.0
	for _, tl := range tls {
		if n := len(tl.Points); n > 0 {
			tmax = max(tmax, tl.Points[n-1].T)
		}
	}
	per := func(value func(TimePoint) float64) []line {
		var ls []line
		for i, tl := range tls {
			name := card.Runs[i].Policy
			ls = append(ls, line{name: name, color: policyColors[name], tl: tl, value: value})
		}
		return ls
	}
	ctl := tls[0]
	oracle := func(v func(TimePoint) float64) line {
		return line{name: "oracle", color: policyColors["oracle"], dash: "4 3", tl: ctl, value: v}
	}
	charts := []reportChart{
		chartOf("Mean distance stretch of the viewers watching", "stretch", tmax, 1,
			append(per(func(p TimePoint) float64 { return p.Stretch }), oracle(func(p TimePoint) float64 { return p.OracleStretch }))),
		chartOf("Viewers waiting (no server could take them)", "viewers", tmax, 0,
			per(func(p TimePoint) float64 { return float64(p.Waiting) })),
		chartOf("Relays open (starting, serving or draining)", "relays", tmax, 0,
			append(per(func(p TimePoint) float64 { return float64(p.Relays) }), oracle(func(p TimePoint) float64 { return p.OracleRelays }))),
		chartOf("Highest server utilisation (viewers / capacity)", "utilisation", tmax, 0,
			per(func(p TimePoint) float64 { return p.Utilization })),
	}
	var vr, sr []line
	for k, name := range ctl.Regions {
		k := k
		color := regionColors[k%len(regionColors)]
		vr = append(vr, line{name: name, color: color, tl: ctl, value: func(p TimePoint) float64 { return float64(p.Viewers[k]) }})
		sr = append(sr, line{name: name, color: color, tl: ctl, value: func(p TimePoint) float64 { return float64(p.Servers[k]) }})
	}
	charts = append(charts,
		chartOf("Viewers per region (controller)", "viewers", tmax, 0, vr),
		chartOf("Servers with viewers per region (controller)", "servers", tmax, 0, sr))
	type row struct {
		Label  string
		Values []string
	}
	var rows []row
	for _, sr := range scoreRows {
		r := row{Label: sr.label}
		for _, s := range card.Runs {
			r.Values = append(r.Values, sr.value(s))
		}
		rows = append(rows, r)
	}
	return reportTmpl.Execute(w, map[string]any{"Card": card, "S": card.Runs[0], "Rows": rows, "Charts": charts,
		"W": chartW, "H": chartH, "L": marginL, "T": marginT, "B": marginT + plotH, "R": marginL + plotW, "MidY": marginT + plotH/2})
}

var reportTmpl = template.Must(template.New("report").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>relaymesh sim: {{.Card.Scenario}}</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; } td, th { padding: 2px 14px 2px 0; text-align: left; }
td:first-child { color: #555; } svg { background: #fff; border: 1px solid #ddd; }
svg text { font: 11px system-ui, sans-serif; fill: #444; }
.legend span { margin-right: 1.2em; } h2 { font-size: 16px; margin-top: 2em; }
.missed { color: #b00; font-weight: bold; } .met { color: #070; }
</style></head><body>
<h1>Scenario {{.Card.Scenario}}</h1>
<p>seed {{.S.Seed}}, scale {{.S.Scale}}: {{printf "%.0f" .S.SimSeconds}} s simulated.
Stretch is max(d, 1) / max(d_best, 1) per viewer-second (1 is perfect); the oracle places the moment's viewers over every
server that is up, within capacity, without start-up delays or stickiness. The score counts a waiting viewer-second as stretch 10.</p>
<table>
<tr><th></th>{{range .Card.Runs}}<th>{{.Policy}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{.Label}}</td>{{range .Values}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{if .Card.Goals}}<h2>Goals (controller)</h2>
<table>{{range .Card.Goals}}<tr><td>{{.Name}}</td><td>{{printf "%.4g" .Value}} (limit {{printf "%.4g" .Limit}})</td>
<td class="{{if .Met}}met{{else}}missed{{end}}">{{if .Met}}met{{else}}missed{{end}}</td></tr>{{end}}</table>{{end}}
{{range .Charts}}
<h2>{{.Title}}</h2>
<svg width="{{$.W}}" height="{{$.H}}" viewBox="0 0 {{$.W}} {{$.H}}" role="img" aria-label="{{.Title}}">
{{range .YTicks}}<line x1="{{$.L}}" x2="{{$.R}}" y1="{{.Pos}}" y2="{{.Pos}}" stroke="#eee"/><text x="{{$.L}}" dx="-6" y="{{.Pos}}" dy="4" text-anchor="end">{{.Label}}</text>
{{end}}{{range .XTicks}}<line x1="{{.Pos}}" x2="{{.Pos}}" y1="{{$.B}}" y2="{{$.B}}" stroke="#999"/><line x1="{{.Pos}}" x2="{{.Pos}}" y1="{{$.B}}" y2="{{$.B}}" dy="4" stroke="#999"/><text x="{{.Pos}}" y="{{$.B}}" dy="16" text-anchor="middle">{{.Label}}</text>
{{end}}<line x1="{{$.L}}" x2="{{$.R}}" y1="{{$.B}}" y2="{{$.B}}" stroke="#999"/><line x1="{{$.L}}" x2="{{$.L}}" y1="{{$.T}}" y2="{{$.B}}" stroke="#999"/>
<text transform="translate(14 {{$.MidY}}) rotate(-90)" text-anchor="middle">{{.YLabel}}</text>
{{range .Series}}<polyline fill="none" stroke="{{.Color}}" stroke-width="1.5"{{if .Dash}} stroke-dasharray="{{.Dash}}"{{end}} points="{{.Points}}"><title>{{.Name}}</title></polyline>
{{end}}</svg>
<div class="legend">{{range .Series}}<span style="color:{{.Color}}">■ {{.Name}}</span>{{end}} &nbsp; x: simulated time</div>
{{end}}
</body></html>
`))
