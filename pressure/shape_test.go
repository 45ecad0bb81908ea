package pressure

import (
	"context"
	"strings"
	"testing"
	"time"

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

// TestScheduleCountsEveryTurnOfAConversation: an episode's send times start sessions, and
// each turn of a conversation is a request against max_requests.
func TestScheduleCountsEveryTurnOfAConversation(t *testing.T) {
	t.Parallel()
	chat := workload.Class{Name: "chat", Requests: 10}
	conv := workload.Class{Name: "conv", Conversations: 10, Turns: workload.Dist{Kind: workload.DistFixed, A: 3}}
	phases := []phase{{name: "steady", dur: 4 * time.Second, rates: map[string]float64{"chat": 5, "conv": 5}}}
	// About 20 sessions a class: 20 requests of chat, 60 of conv's turns.
	if _, err := schedule(context.Background(), []workload.Class{chat}, phases, 1, 40); err != nil {
		t.Errorf("requests alone under max_requests = 40: %v", err)
	}
	_, err := schedule(context.Background(), []workload.Class{conv}, phases, 1, 40)
	if err == nil || !strings.Contains(err.Error(), "more than max_requests = 40") {
		t.Errorf("conversations of three turns: %v, want max_requests refused", err)
	}
}
