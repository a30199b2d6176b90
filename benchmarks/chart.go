package benchmarks

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// variantColors keep a variant's colour the same in every panel.
var variantColors = map[string]color.RGBA{
	"eos":           {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"alos":          {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	"sarama":        {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"franz":         {R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"kstreams_eos":  {R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	"kstreams_alos": {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// chartGroup is one row of the chart: one workload and value size, every
// commit interval.
type chartGroup struct {
	title  string
	points []*Result
}

func chartGroups(r *Report) []chartGroup {
	var groups []chartGroup
	index := map[string]int{}
	for i := range r.Sweep {
		p := &r.Sweep[i]
		key := p.Workload
		if p.ValueSize > 0 {
			key += fmt.Sprintf(", %d B values", p.ValueSize)
		}
		gi, ok := index[key]
		if !ok {
			gi = len(groups)
			index[key] = gi
			groups = append(groups, chartGroup{title: key})
		}
		groups[gi].points = append(groups[gi].points, p)
	}
	for _, g := range groups {
		slices.SortFunc(g.points, func(a, b *Result) int { return int(a.CommitIntervalMs - b.CommitIntervalMs) })
	}
	return groups
}

// Chart draws throughput and p99 latency against the commit interval, one
// row per workload and value size, one line per variant.
func Chart(r *Report) ([][]*plot.Plot, error) {
	var rows [][]*plot.Plot
	for _, g := range chartGroups(r) {
		tp, err := chartPanel(g, fmt.Sprintf("%s: throughput", g.title), "records/s", false, func(v *VariantResult) float64 { return v.RecordsPerSec })
		if err != nil {
			return nil, err
		}
		lat, err := chartPanel(g, fmt.Sprintf("%s: p99 end to end, at half the max EOS rate", g.title), "p99 ms (log)", true, func(v *VariantResult) float64 { return v.P99Ms })
		if err != nil {
			return nil, err
		}
		rows = append(rows, []*plot.Plot{tp, lat})
	}
	return rows, nil
}

// chartPanel draws one panel; logY puts the values on a log scale (latency:
// a peer's multi-second backlog would flatten every other line to zero).
func chartPanel(g chartGroup, title, ylabel string, logY bool, value func(*VariantResult) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "commit interval (ms, log)"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	series := map[string]plotter.XYs{}
	var names []string
	for _, pt := range g.points {
		vnames, all := pt.variants()
		for _, n := range vnames {
			y := value(all[n])
			if !(y > 0) {
				continue
			}
			if _, ok := series[n]; !ok {
				names = append(names, n)
			}
			series[n] = append(series[n], plotter.XY{X: pt.CommitIntervalMs, Y: y})
		}
	}
	slices.SortFunc(names, func(a, b string) int { return orderOf(a) - orderOf(b) })
	for _, n := range names {
		l, s, err := plotter.NewLinePoints(series[n])
		if err != nil {
			return nil, err
		}
		c, ok := variantColors[n]
		if !ok {
			c = color.RGBA{A: 0xff}
		}
		l.Color, s.Color = c, c
		l.Width = vg.Points(1.5)
		s.Shape = draw.CircleGlyph{}
		p.Add(l, s)
		p.Legend.Add(n, l, s)
	}
	fixLogRange(&p.X)
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		fixLogRange(&p.Y)
		p.Y.Max *= 1.5
		return p, nil
	}
	p.Y.Min = 0
	p.Y.Max *= 1.1
	p.Y.Tick.Marker = shortTicks{}
	return p, nil
}

// shortTicks are the default ticks labelled briefly: 25k, 1.5M, 120.
type shortTicks struct{}

func (shortTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = short(ts[i].Value)
		}
	}
	return ts
}

func short(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// fixLogRange widens a log axis around a single value (or none), which it
// cannot draw as a zero-width range.
func fixLogRange(a *plot.Axis) {
	if a.Min <= 0 || math.IsInf(a.Min, 0) || a.Max <= 0 {
		a.Min, a.Max = 1, 10
	}
	if a.Min == a.Max {
		a.Min, a.Max = a.Min/2, a.Max*2
	}
}

// WriteChart writes the chart as SVG (and as PNG beside it when path ends
// in .svg: name.png), sized to its rows.
func WriteChart(r *Report, path string) error {
	rows, err := Chart(r)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("bench: nothing to chart")
	}
	w, h := 11*vg.Inch, vg.Length(len(rows))*3.6*vg.Inch
	if err := drawTo(rows, vgsvg.New(w, h), path); err != nil {
		return err
	}
	if filepath.Ext(path) == ".svg" {
		png := path[:len(path)-len(".svg")] + ".png"
		return drawTo(rows, vgimg.PngCanvas{Canvas: vgimg.New(w, h)}, png)
	}
	return nil
}

type canvasWriter interface {
	vg.CanvasSizer
	io.WriterTo
}

func drawTo(rows [][]*plot.Plot, c canvasWriter, path string) error {
	dc := draw.New(c)
	white := dc
	white.SetColor(color.White)
	white.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: len(rows), Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(rows, tiles, dc)
	for i, row := range rows {
		for j, p := range row {
			p.Draw(canvases[i][j])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: chart: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("bench: chart: %w", err)
	}
	return f.Close()
}

// WriteOut writes results.json and chart.svg (with chart.png) into dir.
func WriteOut(r *Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "results.json"))
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := r.WriteJSON(f); err != nil {
		f.Close()
		return fmt.Errorf("bench: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return WriteChart(r, filepath.Join(dir, "chart.svg"))
}
