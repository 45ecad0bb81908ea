package search

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/quality"
	"github.com/frontier-llm/frontier/sim"
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
		a, ok, err := ResolveArch(p)
		if err != nil || !ok {
			t.Fatalf("engine %s: archFor = %v, %v", tt.engine, ok, err)
		}
		if a.Catalog != tt.wantCatalog {
			t.Errorf("engine %s: Catalog = %v, want %v", tt.engine, a.Catalog, tt.wantCatalog)
		}
	}
}

// TestSimGeneratorAnswersAtTheCheckpointsPrecision checks that the simulator's answers for a
// config_json checkpoint quantised with AWQ, served without a quantization knob, are those of
// AWQ precision, not of full precision.
func TestSimGeneratorAnswersAtTheCheckpointsPrecision(t *testing.T) {
	t.Parallel()
	cfgPath := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfgPath, []byte(`{"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
		"num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
		"max_position_embeddings": 131072, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &plan.Plan{}
	p.Engine.Kind = plan.EngineSim
	p.Model.ConfigJSON = cfgPath
	p.Study.Seed = 3
	p.Study.WorkloadSeed, p.Study.HasWorkloadSeed = 3, true
	item := quality.Item{ID: "q1", Prompt: "Summarise the ticket.",
		Reference: "The customer's parcel ordered a week ago has not arrived and tracking still says preparing."}
	answer := func(g quality.Generator) string {
		t.Helper()
		out, err := g.Generate(context.Background(), item)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := answer(simGenerator(p, plan.Config{"quantization": "none"}))
	want := answer(quality.NewSimGeneratorFor(sim.AnswerModel{Quantization: "awq", Seed: 3}))
	full := answer(quality.NewSimGeneratorFor(sim.AnswerModel{Seed: 3}))
	if want == full {
		t.Fatalf("the item is too short for AWQ to edit more than full precision: %q", full)
	}
	if got != want {
		t.Errorf("answer of the AWQ checkpoint = %q, want the AWQ answer %q (full precision: %q)", got, want, full)
	}
}
