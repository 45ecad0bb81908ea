package report

import (
	"testing"

	"github.com/frontier-llm/frontier/record"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/workload"
)

// TestGPUSectionSaysEngineTimeWithoutGPUs checks that machine time is named for what it is:
// GPU time for trials on GPUs, engine time for a study whose engines ran on the CPU only,
// and the CPU part set apart when a study has both.
func TestGPUSectionSaysEngineTimeWithoutGPUs(t *testing.T) {
	t.Parallel()
	trial := func(secs float64, cpu bool) record.Trial {
		return record.Trial{State: record.StateComplete, GPUSeconds: secs, CPUOnly: cpu, Total: &workload.Result{}}
	}
	tests := []struct {
		name   string
		trials []record.Trial
		want   section
	}{
		{"GPUs", []record.Trial{trial(30, false), trial(5, false)}, section{Title: "GPU time", ID: "gpu", Lines: []string{
			"Spent: 35 s of GPU time, 35 s of it in trials that completed their measurement.",
			"By state: complete 35 s.",
			"Saved: 0 s by early stopping, the memory pre-screen and fast launch failures.",
		}}},
		{"CPU only", []record.Trial{trial(30, true), trial(5, true)}, section{Title: "Engine time", ID: "gpu", Lines: []string{
			"Spent: 35 s of engine time, 35 s of it in trials that completed their measurement.",
			"Every engine ran on the CPU, with no GPU: these are seconds of engine time, not GPU-seconds.",
			"By state: complete 35 s.",
			"Saved: 0 s by early stopping, the memory pre-screen and fast launch failures.",
		}}},
		{"both", []record.Trial{trial(30, false), trial(5, true)}, section{Title: "GPU time", ID: "gpu", Lines: []string{
			"Spent: 35 s of GPU time, 35 s of it in trials that completed their measurement.",
			"5 s of it is engine time on the CPU only, not GPU time.",
			"By state: complete 35 s.",
			"Saved: 0 s by early stopping, the memory pre-screen and fast launch failures.",
		}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &Analysis{GPUTime: gpuTime(&record.Study{Trials: tc.trials})}
			if diff := cmp.Diff(tc.want, gpuSection(a)); diff != "" {
				t.Errorf("GPU time section (-want +got):\n%s", diff)
			}
		})
	}
}
