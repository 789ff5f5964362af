package sim

import (
	"fmt"
	"html/template"
	"io"
	"strings"
)

// WriteHTML writes a self-contained HTML report: the summary and SVG charts
// of viewers and serving servers per region over time, and of the highest
// server utilisation.
func WriteHTML(w io.Writer, s *Summary, tl *Timeline) error {
	type series struct {
		Name   string
		Color  string
		Points string
	}
	type chart struct {
		Title  string
		Max    string
		Series []series
	}
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}
	const width, height = 900.0, 220.0
	tmax := 1.0
	if n := len(tl.Points); n > 0 {
		tmax = max(tl.Points[n-1].T, 1)
	}
	build := func(title string, value func(p TimePoint, region int) float64, regions []string) chart {
		c := chart{Title: title}
		vmax := 0.0
		for _, p := range tl.Points {
			for k := range regions {
				vmax = max(vmax, value(p, k))
			}
		}
		if vmax == 0 {
			vmax = 1
		}
		c.Max = trimFloat(vmax)
		for k, name := range regions {
			var b strings.Builder
			for _, p := range tl.Points {
				fmt.Fprintf(&b, "%.1f,%.1f ", p.T/tmax*width, height-value(p, k)/vmax*height)
			}
			c.Series = append(c.Series, series{Name: name, Color: colors[k%len(colors)], Points: b.String()})
		}
		return c
	}
	charts := []chart{
		build("Viewers per region", func(p TimePoint, k int) float64 { return float64(p.Viewers[k]) }, tl.Regions),
		build("Servers with viewers per region", func(p TimePoint, k int) float64 { return float64(p.Servers[k]) }, tl.Regions),
		build("Highest server utilisation (viewers / capacity)", func(p TimePoint, _ int) float64 { return p.Utilization }, []string{"max"}),
	}
	return reportTmpl.Execute(w, map[string]any{"S": s, "Charts": charts, "W": width, "H": height, "TMax": trimFloat(tmax)})
}

func trimFloat(f float64) string {
	if f >= 100 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.2f", f)
}

var reportTmpl = template.Must(template.New("report").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>relaymesh sim: {{.S.Scenario}}</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; } td { padding: 2px 12px 2px 0; }
td:first-child { color: #555; } svg { background: #fafafa; border: 1px solid #ddd; }
.legend span { margin-right: 1em; } h2 { font-size: 16px; margin-top: 2em; }
</style></head><body>
<h1>Scenario {{.S.Scenario}}</h1>
<p>seed {{.S.Seed}}, scale {{.S.Scale}}: {{printf "%.0f" .S.SimSeconds}} s simulated in {{printf "%.2f" .S.WallSeconds}} s</p>
<table>
<tr><td>viewers, peak</td><td>{{.S.ViewersPeak}}</td></tr>
<tr><td>relays opened / closed / peak</td><td>{{.S.RelaysOpened}} / {{.S.RelaysClosed}} / {{.S.RelaysPeak}}</td></tr>
<tr><td>peak utilisation</td><td>{{printf "%.3f" .S.PeakUtilization}}</td></tr>
<tr><td>relay-seconds over capacity</td><td>{{printf "%.0f" .S.RelaySecondsOverCapacity}}</td></tr>
<tr><td>distance stretch, mean / p99</td><td>{{printf "%.3f" .S.MeanDistanceStretch}} / {{printf "%.2f" .S.P99DistanceStretch}}</td></tr>
<tr><td>oscillations</td><td>{{.S.Oscillations}}</td></tr>
<tr><td>decisions per second</td><td>{{printf "%.0f" .S.DecisionsPerSecond}}</td></tr>
</table>
{{range .Charts}}
<h2>{{.Title}}</h2>
<svg width="{{$.W}}" height="{{$.H}}" viewBox="0 0 {{$.W}} {{$.H}}" role="img" aria-label="{{.Title}}">
{{range .Series}}<polyline fill="none" stroke="{{.Color}}" stroke-width="1.5" points="{{.Points}}"><title>{{.Name}}</title></polyline>
{{end}}</svg>
<div class="legend">y: 0 … {{.Max}}, x: 0 … {{$.TMax}} s &nbsp; {{range .Series}}<span style="color:{{.Color}}">■ {{.Name}}</span>{{end}}</div>
{{end}}
</body></html>
`))
