package search

import (
	"path/filepath"
	"testing"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/sim"
)

// TestSimulatedStudyRecordsTheModelsConfidence: a study on the simulator stores, for every
// SKU it can run on (the hardware's and the sku knob's), the performance model's validation,
// so that the report can say how far its figures can be trusted.
func TestSimulatedStudyRecordsTheModelsConfidence(t *testing.T) {
	p, err := plan.Load(filepath.Join("..", "examples", "procurement.hcl"), plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := header(p, Options{Estimate: true})
	got := map[string]string{}
	for _, c := range h.ModelConfidence {
		got[c.SKU] = c.Level
		want, ok := sim.Confidence(c.SKU)
		switch {
		case ok && (c.Level != want.Level || c.Points != want.Points || c.MedianError != want.MedianError):
			t.Errorf("%s: stored %+v, the model's validation says %+v", c.SKU, c, want)
		case !ok && c.Level != "unvalidated":
			t.Errorf("%s: no published measurement was scored, yet the level is %q", c.SKU, c.Level)
		}
	}
	for _, sku := range []string{"h100-sxm", "h200", "l40s", "a100-80gb", "mi300x"} {
		if _, ok := got[sku]; !ok {
			t.Errorf("no confidence stored for %s (the sku knob's values): %v", sku, got)
		}
	}
	unvalidated := 0
	for _, level := range got {
		if level == "unvalidated" {
			unvalidated++
		}
	}
	if _, ok := sim.Confidence("l40s"); !ok && unvalidated == 0 {
		t.Errorf("no SKU is unvalidated, though the validation set has no L40S point: %v", got)
	}
}
