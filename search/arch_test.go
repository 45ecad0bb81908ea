package search

import (
	"testing"

	"github.com/frontier-llm/frontier/plan"
)

// TestArchForTakesACatalogEntryAsACheckpointForARealEngine checks the rule of
// sim.CheckStartup for methods that need a quantised checkpoint, as the search applies it:
// on the simulator a catalog architecture is a model family (awq means its AWQ checkpoint),
// with a real engine it stands for the one checkpoint model.name serves.
func TestArchForTakesACatalogEntryAsACheckpointForARealEngine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		engine      string
		wantCatalog bool
	}{{plan.EngineSim, true}, {plan.EngineVLLM, false}} {
		p := &plan.Plan{}
		p.Engine.Kind = tt.engine
		p.Model.Architecture = "llama-3.1-8b"
		a, ok, err := archFor(p)
		if err != nil || !ok {
			t.Fatalf("engine %s: archFor = %v, %v", tt.engine, ok, err)
		}
		if a.Catalog != tt.wantCatalog {
			t.Errorf("engine %s: Catalog = %v, want %v", tt.engine, a.Catalog, tt.wantCatalog)
		}
	}
}
