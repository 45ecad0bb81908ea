package report

import (
	"maps"
	"slices"
	"strconv"

	"github.com/frontier-llm/frontier/workload"
)

// turnTable is the time to first token of each turn of the classes of conversations in
// results, in the order of names then the others by name; ok is false when no class has
// turns. A turn's prompt holds its conversation's whole history, so the table shows what the
// prefix cache saves (or fails to) as conversations grow.
func turnTable(results map[string]*workload.Result, names []string, sim bool) (table, bool) {
	order := slices.Clone(names)
	for _, n := range slices.Sorted(maps.Keys(results)) {
		if !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	tb := table{Header: []string{"workload", "turn", "completed", "prompt tokens (mean)", "ttft_p50_ms", "ttft_p99_ms", "ttft_mean_ms"}}
	for _, n := range order {
		r := results[n]
		if r == nil {
			continue
		}
		for i, t := range r.Turns {
			m := t.Metrics
			prompt := 0.0
			if c := m[workload.Completed]; c > 0 {
				prompt = m[workload.InputTokenThroughput] * m[workload.DurationS] / c
			}
			tb.Rows = append(tb.Rows, []string{n, strconv.Itoa(i + 1), formatMetric(workload.Completed, m[workload.Completed]),
				strconv.FormatFloat(prompt, 'f', 0, 64), marked(m["ttft_p50_ms"], sim), marked(m["ttft_p99_ms"], sim), marked(m["ttft_mean_ms"], sim)})
		}
	}
	return tb, len(tb.Rows) > 0
}
