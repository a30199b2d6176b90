package chaos

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// kindColors keep a fault kind's colour the same in every chart.
var kindColors = map[string]color.RGBA{
	FaultReplicaKill:  {R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	FaultReplicaPause: {R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	FaultBrokerKill:   {R: 0x00, G: 0x00, B: 0x00, A: 0xff},
	FaultNetwork:      {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	FaultRequest:      {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// chartGap is the longest time between two throughput samples drawn as
// one line.
const chartGap = 3.0

// Chart draws the committed input records per second over the run (from
// the throughput samples) with each fault as a band from its start to its
// end, coloured by kind.
func Chart(r Result) (*plot.Plot, error) {
	p := plot.New()
	verdict := "exactly-once held"
	if !r.OK {
		verdict = "VIOLATED"
	}
	p.Title.Text = fmt.Sprintf("onceflow chaos: %d events, %d lost, %d duplicated (%s)", r.Events, r.Lost, r.Duplicated, verdict)
	p.X.Label.Text = "seconds since the start"
	p.Y.Label.Text = "committed input records/s"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	runs := rateRuns(r.Throughput)
	peak := 0.0
	for _, run := range runs {
		for _, xy := range run {
			peak = max(peak, xy.Y)
		}
	}
	if peak == 0 {
		peak = 1
	}
	top := peak * 1.15
	seen := map[string]bool{}
	for _, f := range r.Faults {
		end := f.At + max(f.Seconds, 0.5)
		band, err := plotter.NewPolygon(plotter.XYs{{X: f.At, Y: 0}, {X: end, Y: 0}, {X: end, Y: top}, {X: f.At, Y: top}})
		if err != nil {
			return nil, err
		}
		c := kindColors[f.Kind]
		band.Color = color.NRGBA{R: c.R, G: c.G, B: c.B, A: 0x50}
		band.LineStyle.Width = 0
		p.Add(band)
		if !seen[f.Kind] {
			seen[f.Kind] = true
			p.Legend.Add(f.Kind, band)
		}
	}
	for i, run := range runs {
		l, err := plotter.NewLine(run)
		if err != nil {
			return nil, err
		}
		l.Color = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
		l.Width = vg.Points(1.2)
		p.Add(l)
		if i == 0 {
			p.Legend.Add("committed/s", l)
		}
	}
	p.Y.Min, p.Y.Max = 0, top
	return p, nil
}

// rateRuns turns the samples into committed records per second, one run
// of points per stretch of samples at most chartGap apart: a gap (the
// group's offsets could not be read) stays a gap, not a slope.
func rateRuns(samples []Sample) []plotter.XYs {
	var runs []plotter.XYs
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		dt := b.At - a.At
		if dt <= 0 {
			continue
		}
		if dt > chartGap || len(runs) == 0 {
			runs = append(runs, nil)
		}
		v := max(0, float64(b.Committed-a.Committed)/dt)
		runs[len(runs)-1] = append(runs[len(runs)-1], plotter.XY{X: b.At, Y: v})
	}
	return runs
}

// WriteChart writes Chart as SVG to path, and as PNG beside it when path
// ends in .svg (name.png).
func WriteChart(r Result, path string) error {
	w, h := 12*vg.Inch, 4.5*vg.Inch
	if err := drawChart(r, vgsvg.New(w, h), path); err != nil {
		return err
	}
	if filepath.Ext(path) == ".svg" {
		return drawChart(r, vgimg.PngCanvas{Canvas: vgimg.New(w, h)}, strings.TrimSuffix(path, ".svg")+".png")
	}
	return nil
}

type canvasWriter interface {
	vg.CanvasSizer
	io.WriterTo
}

func drawChart(r Result, c canvasWriter, path string) error {
	p, err := Chart(r)
	if err != nil {
		return fmt.Errorf("chaos: chart: %w", err)
	}
	dc := draw.New(c)
	white := dc
	white.SetColor(color.White)
	white.Fill(dc.Rectangle.Path())
	p.Draw(dc)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("chaos: chart: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("chaos: chart: %w", err)
	}
	return f.Close()
}
