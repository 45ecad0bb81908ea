package pressure

import (
	"testing"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// TestShapeFindsTheStepAtARefinedBoundary checks shape against a refined boundary that falls
// between two rounded step scales: the step measured there is stored with its scale rounded
// down below the boundary, which once left shape with no step and a nil dereference.
func TestShapeFindsTheStepAtARefinedBoundary(t *testing.T) {
	t.Parallel()
	steps := []record.LadderStep{
		{Scale: 1, MetSLO: true, Metrics: map[string]float64{workload.Goodput: 10}},
		{Scale: 1.5, Metrics: map[string]float64{workload.Goodput: 3}},
		{Scale: round3(1.2244), Metrics: map[string]float64{workload.Goodput: 4}},
	}
	tests := []struct {
		name      string
		hi        float64
		firstMiss *record.LadderStep
		want      string
	}{
		{"boundary rounded below its step", 1.2244, &steps[1], "collapse"},
		{"boundary above every step", 7, &steps[1], "collapse"},
		{"no miss", 1.5, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := shape(steps, tc.hi, tc.firstMiss); got != tc.want {
				t.Errorf("shape(hi=%v) = %q, want %q", tc.hi, got, tc.want)
			}
		})
	}
}
