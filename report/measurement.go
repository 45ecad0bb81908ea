package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"

	"github.com/frontier-llm/frontier/workload"
)

// WriteMeasurementTable prints a measurement for people: one row per metric it has, one
// column per workload class (those named in order first, then the others by name) and one
// for the total when it says more than the one class does, then the error counts.
func WriteMeasurementTable(w io.Writer, m *workload.Measurement, order []string) error {
	var names []string
	for _, n := range order {
		if m.Workloads[n] != nil && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(m.Workloads)) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	results := make([]*workload.Result, 0, len(names)+1)
	header := []any{"metric"}
	for _, n := range names {
		results = append(results, m.Workloads[n])
		header = append(header, n)
	}
	// One class and the total are the same but for the engine's metrics (queue, KV cache,
	// preemptions, prefix cache), which only the total carries.
	showTotal := len(names) != 1
	for k := range m.Total.Metrics {
		if len(names) == 1 {
			if _, ok := m.Workloads[names[0]].Metrics[k]; !ok {
				showTotal = true
			}
		}
	}
	if showTotal {
		results = append(results, m.Total)
		header = append(header, "total")
	}
	var rows [][]string
	for _, metric := range workload.MetricNames() {
		row := []string{metric}
		has := false
		for _, r := range results {
			v, ok := r.Metrics[metric]
			if !ok {
				row = append(row, "-")
				continue
			}
			has = true
			row = append(row, formatMetric(metric, v))
		}
		if has {
			rows = append(rows, row)
		}
	}
	t := tablewriter.NewWriter(w)
	t.Header(header...)
	if err := t.Bulk(rows); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	if errs := m.Total.Errors; len(errs) > 0 {
		if _, err := fmt.Fprintf(w, "errors: %s\n", FormatErrors(errs)); err != nil {
			return err
		}
	}
	if tb, ok := turnTable(m.Workloads, names, m.Simulated); ok {
		if _, err := fmt.Fprintln(w, "time to first token by turn:"); err != nil {
			return err
		}
		tt := tablewriter.NewWriter(w)
		header := make([]any, len(tb.Header))
		for i, h := range tb.Header {
			header[i] = h
		}
		tt.Header(header...)
		if err := tt.Bulk(tb.Rows); err != nil {
			return fmt.Errorf("writing the table: %w", err)
		}
		if err := tt.Render(); err != nil {
			return fmt.Errorf("writing the table: %w", err)
		}
	}
	return nil
}

// formatMetric writes a metric's value: counts whole, fractions to 4 places, the rest to 2.
func formatMetric(name string, v float64) string {
	switch name {
	case workload.Completed, workload.Failed, workload.Cancelled, workload.Preemptions:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case workload.ErrorRate, workload.KVCacheUsageMax, workload.PrefixCacheHitRate, workload.KVTransferTTFTShare:
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// FormatErrors writes error counts as KIND=COUNT pairs in kind order.
func FormatErrors(errs map[string]int) string {
	parts := make([]string, 0, len(errs))
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, errs[k]))
	}
	return strings.Join(parts, " ")
}
