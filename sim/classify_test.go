package sim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/launcher"
	"github.com/frontier-llm/frontier/sim"
)

// TestStartupClassesMatchTheLauncher checks that the pre-screen (CheckStartup) and the
// launcher, reading the same message from a real start, put a failure in the same class.
func TestStartupClassesMatchTheLauncher(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, arch, sku string
		set             func(c *sim.EngineConfig)
	}{
		{"weights", "llama-3.1-405b", "h100-sxm", func(c *sim.EngineConfig) {}},
		{"no cache", "llama-3.1-70b", "h200", func(c *sim.EngineConfig) { c.GPUMemoryUtilization = 0.5 }},
		{"max_model_len", "llama-3.1-8b", "l4", func(c *sim.EngineConfig) {}},
		{"graphs", "llama-3.1-8b", "h100-sxm", func(c *sim.EngineConfig) {
			c.GPUMemoryUtilization, c.MaxModelLen, c.VLLMVersion = 0.999, 8192, "0.13" // graphs outside the budget
		}},
		{"heads", "qwen2.5-7b", "h100-sxm", func(c *sim.EngineConfig) { c.TensorParallelSize = 8 }},
		{"budget", "llama-3.1-8b", "h100-sxm", func(c *sim.EngineConfig) { c.MaxNumSeqs, c.MaxNumBatchedTokens, c.MaxModelLen = 64, 32, 4096 }},
		{"no chunking", "llama-3.1-8b", "h100-sxm", func(c *sim.EngineConfig) { c.EnableChunkedPrefill, c.MaxNumBatchedTokens = false, 4096 }},
		{"long max_model_len", "llama-2-70b", "h200", func(c *sim.EngineConfig) { c.MaxModelLen = 8192 }},
		{"partial prefills", "llama-3.1-8b", "h100-sxm", func(c *sim.EngineConfig) { c.MaxNumPartialPrefills = 2 }},
		{"unknown quantization", "llama-3.1-8b", "h100-sxm", func(c *sim.EngineConfig) { c.Quantization = "int3" }},
		// An unquantised checkpoint (a config.json without quantization_config), not a catalog
		// entry, which would be served as its AWQ checkpoint.
		{"awq on an unquantised checkpoint", "config.json:llama-3.1-8b", "h100-sxm", func(c *sim.EngineConfig) { c.Quantization = "awq" }},
		{"kv dtype", "llama-3.1-8b", "h100-sxm", func(c *sim.EngineConfig) { c.KVCacheDType = "int4" }},
		{"block size", "llama-3.1-8b", "h100-sxm", func(c *sim.EngineConfig) { c.BlockSize = 12 }},
		{"utilization", "llama-3.1-8b", "h100-sxm", func(c *sim.EngineConfig) { c.GPUMemoryUtilization = 1.5 }},
		{"world size", "llama-3.1-405b", "h100-sxm", func(c *sim.EngineConfig) { c.TensorParallelSize, c.PipelineParallelSize = 8, 2 }},
		{"data parallel beyond the node", "llama-3.1-8b", "h100-sxm", func(c *sim.EngineConfig) { c.DataParallelSize, c.TensorParallelSize = 8, 2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name, checkpoint := strings.CutPrefix(tt.arch, "config.json:")
			arch, _ := sim.LookupArch(name)
			arch.Catalog = !checkpoint
			sku, _ := hw.LookupSKU(tt.sku)
			c := sim.DefaultConfig()
			tt.set(&c)
			_, err := sim.CheckStartup(arch, sku, c)
			var se *sim.StartupError
			if !errors.As(err, &se) {
				t.Fatalf("CheckStartup = %v, want a *StartupError", err)
			}
			got := launcher.ClassifyVLLMLog(se.Message)
			if string(got.Class) != se.Class {
				t.Errorf("pre-screen class %s, launcher class %s for %q", se.Class, got.Class, se.Message)
			}
		})
	}
}
