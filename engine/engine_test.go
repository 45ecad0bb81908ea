package engine

import (
	"testing"
	"time"
)

func TestEveryKindHasADescription(t *testing.T) {
	t.Parallel()
	for _, k := range Kinds() {
		d, ok := Lookup(k)
		if !ok || d.Kind != k || d.StartupTimeout <= 0 {
			t.Errorf("%s: %+v, %v; want a description with a startup timeout", k, d, ok)
		}
		if d.NeedsGPU && d.CPUOnly {
			t.Errorf("%s both needs a GPU and runs on the CPU alone", k)
		}
	}
	if _, ok := Lookup("tgi"); ok {
		t.Error("an unknown kind has a description")
	}
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind                             string
		simulated, vllm, model, needsGPU bool
		timeout                          time.Duration
	}{
		{VLLM, false, true, true, true, 20 * time.Minute},
		{Sim, true, true, true, false, 2 * time.Minute},
		{Ollama, false, false, false, false, 5 * time.Minute},
	} {
		d := MustLookup(tc.kind)
		if d.Simulated != tc.simulated || d.VLLMCompatible != tc.vllm || d.OfflineModel != tc.model || d.NeedsGPU != tc.needsGPU || d.StartupTimeout != tc.timeout {
			t.Errorf("%s: %+v", tc.kind, d)
		}
	}
}

func TestLookupReturnsACopyOfTheCommand(t *testing.T) {
	t.Parallel()
	d := MustLookup(VLLM)
	d.DefaultCommand[0] = "changed"
	if MustLookup(VLLM).DefaultCommand[0] != "vllm" {
		t.Error("a caller changed the shared default command")
	}
}
