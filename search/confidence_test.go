package search

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/sim"
	"github.com/frontier-llm/frontier/workload"
)

// TestSimulatedStudyRecordsTheModelsConfidence: a study on the simulator stores, for every
// SKU it can run on (the hardware's and the sku knob's), the performance model's validation
// for the plan's model family, so that the report can say how far its figures can be
// trusted; where the SKU has no measurement of that family, it says so and adds the SKU's
// score over its other measurements.
func TestSimulatedStudyRecordsTheModelsConfidence(t *testing.T) {
	p, err := plan.Load(filepath.Join("..", "examples", "procurement.hcl"), plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	arch, ok, err := ResolveArch(p)
	if err != nil || !ok || arch.Family() != sim.FamilyDense {
		t.Fatalf("procurement.hcl's model: %v, %v, %v; want a dense catalog architecture", arch.Name, ok, err)
	}
	h := header(p, Options{Estimate: true})
	bySKU := map[string][]record.ModelConfidence{}
	for _, c := range h.ModelConfidence {
		bySKU[c.SKU] = append(bySKU[c.SKU], c)
	}
	for _, sku := range []string{"h100-sxm", "h200", "l40s", "a100-80gb", "mi300x"} {
		got := bySKU[sku]
		if len(got) == 0 {
			t.Errorf("no confidence stored for %s (the sku knob's values): %v", sku, h.ModelConfidence)
			continue
		}
		fam, famOK := sim.ConfidenceFor(sku, arch)
		all, allOK := sim.Confidence(sku)
		if got[0] != fam || got[0].Family != sim.FamilyDense {
			t.Errorf("%s: stored %+v first, want the dense family's %+v", sku, got[0], fam)
		}
		switch {
		case famOK && len(got) != 1:
			t.Errorf("%s: dense models are validated on it, yet %d entries are stored: %v", sku, len(got), got)
		case !famOK && allOK && (len(got) != 2 || got[1] != all):
			t.Errorf("%s: no dense point but %d others; stored %v, want the SKU-wide %+v second", sku, all.Points, got, all)
		case !famOK && !allOK && (len(got) != 1 || got[0].Level != "unvalidated"):
			t.Errorf("%s: no published point at all, stored %v", sku, got)
		}
	}
}

// TestEstimateCarriesTheMeasurementsStartupWave: an estimate of a plan whose classes start
// all at once reports the start-up wave the measurement holds, the same one in both places.
// The plan's closed loop warms up with its start-up wave by default; with no warm-up the
// wave is measured.
func TestEstimateCarriesTheMeasurementsStartupWave(t *testing.T) {
	t.Parallel()
	p, err := plan.Load(filepath.Join("..", "examples", "procurement.hcl"), plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Workloads[0].Warmup = 0
	as, err := NewAssessor(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := plan.Config{"sku": "h100-sxm", "tensor_parallel_size": int64(1), "max_num_seqs": int64(32)}
	ests, err := EstimateAll(context.Background(), as, []plan.Config{cfg})
	if err != nil {
		t.Fatal(err)
	}
	e := ests[0]
	if e.StartupWave == nil || e.StartupWave.Requests == 0 || e.Measurement == nil || e.Measurement.StartupWave != e.StartupWave {
		t.Errorf("estimate of %s: wave %+v, measurement's %+v; want the same, non-empty", cfg, e.StartupWave, e.Measurement)
	}
}

// TestDefaultWarmupLeavesTheStartupWaveOut: the estimate of a closed loop whose plan sets no
// warmup measures none of the requests its clients send at once when the run starts.
func TestDefaultWarmupLeavesTheStartupWaveOut(t *testing.T) {
	t.Parallel()
	p, err := plan.Load(filepath.Join("..", "examples", "procurement.hcl"), plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Workloads[0]
	if c.Arrival.Kind != workload.ArrivalConcurrency || c.Warmup != c.Arrival.Concurrency {
		t.Fatalf("procurement.hcl's class: arrival %+v, warmup %d; want a closed loop warmed up by its concurrency", c.Arrival, c.Warmup)
	}
	as, err := NewAssessor(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := plan.Config{"sku": "h100-sxm", "tensor_parallel_size": int64(1), "max_num_seqs": int64(32)}
	ests, err := EstimateAll(context.Background(), as, []plan.Config{cfg})
	if err != nil {
		t.Fatal(err)
	}
	if w := ests[0].StartupWave; w != nil {
		t.Errorf("estimate of %s measured a start-up wave of %d requests (%.0f%% of TTFT); want none", cfg, w.Requests, 100*w.Share)
	}
}
