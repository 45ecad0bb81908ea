package report

import (
	"bufio"
	"embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
)

//go:embed templates/report.html.tmpl
var templates embed.FS

// htmlTemplate parses the page template. It is parsed per call, so the package holds no
// mutable state; parsing takes well under a millisecond.
func htmlTemplate() (*template.Template, error) {
	t, err := template.New("report.html.tmpl").Funcs(template.FuncMap{
		"sub": func(a, b float64) float64 { return a - b },
	}).ParseFS(templates, "templates/report.html.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse the HTML template: %w", err)
	}
	return t, nil
}

type htmlPage struct {
	Title     string
	Simulated bool
	Sections  []section
}

// WriteHTML writes the report of a study as one self-contained HTML page: no scripts, no
// network, with SVG plots of the front against every pair of objectives, the latency
// distributions of the front's trials, and the KV-cache usage and queue over time of the
// recommended trial. Every string from the study, model outputs and engine messages
// included, is escaped by html/template.
func WriteHTML(w io.Writer, a *Analysis, o Options) error {
	t, err := htmlTemplate()
	if err != nil {
		return err
	}
	secs := sections(a, o)
	for i := range secs {
		if secs[i].ID == "overview" {
			// The page says it once, in a banner, rather than in the overview's lines.
			secs[i].Lines = slices.DeleteFunc(secs[i].Lines, func(l string) bool { return strings.HasPrefix(l, "SIMULATED:") })
		}
		if secs[i].ID == "pressure" {
			secs[i].Plots = append(secs[i].Plots, pressurePlots(a.Record)...)
		}
		if secs[i].ID == "front" {
			for _, p := range frontPlots(a) {
				secs[i].Plots = append(secs[i].Plots, p)
			}
		}
	}
	if ps := latencyPlots(a); len(ps) > 0 {
		secs = insertAfter(secs, "recommended", section{Title: "Latency distributions on the front", ID: "latency",
			Lines: []string{"Each curve is one trial of the front: the share of requests (y) served within a latency (x)."},
			Plots: ps})
	}
	if ps := timePlots(a); len(ps) > 0 {
		secs = insertAfter(secs, "latency", section{Title: "Engine state over time", ID: "timeseries",
			Lines: []string{"KV-cache usage and the number of requests waiting and running, from the engine's metrics during the measured window."},
			Plots: ps})
	}
	bw := bufio.NewWriter(w)
	if err := t.Execute(bw, htmlPage{Title: title(a), Simulated: a.Simulated, Sections: secs}); err != nil {
		return fmt.Errorf("render the HTML report: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write the HTML report: %w", err)
	}
	return nil
}

// insertAfter inserts s after the section with the given ID, or after the last one when
// there is none.
func insertAfter(secs []section, id string, s section) []section {
	at := len(secs)
	for i := range secs {
		if secs[i].ID == id {
			at = i + 1
		}
	}
	out := append([]section{}, secs[:at]...)
	out = append(out, s)
	return append(out, secs[at:]...)
}
