package search

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/frontier-llm/frontier/workload"
)

// TestStudyRecordsDataParallelGPUsAndThroughput runs a study on the offline model over
// data_parallel_size 1 and 2 under a load that saturates one engine core: the trial of two
// records two GPUs (data parallel x tensor parallel) and close to twice the throughput, so
// the same throughput per GPU.
func TestStudyRecordsDataParallelGPUsAndThroughput(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "dataparallel.hcl")
	sum, err := Run(context.Background(), p, Options{Storage: filepath.Join(t.TempDir(), "s.db"), Estimate: true})
	if err != nil {
		t.Fatal(err)
	}
	tput := map[int64]float64{}
	for _, tr := range sum.Record.Trials {
		f, _ := toFloat(tr.Config["data_parallel_size"])
		dp := int64(f)
		if tr.Total == nil {
			t.Fatalf("trial %d (data_parallel_size %d) has no measurement: %s", tr.Number, dp, tr.Reason)
		}
		if tr.GPUs != int(dp) {
			t.Errorf("trial %d, data_parallel_size %d: %d GPUs recorded, want %d", tr.Number, dp, tr.GPUs, dp)
		}
		tput[dp] = tr.Total.Metrics[workload.OutputTokenThroughput]
	}
	if len(tput) != 2 {
		t.Fatalf("trials over data_parallel_size %v, want 1 and 2", tput)
	}
	if r := tput[2] / tput[1]; r < 1.8 || r > 2.05 {
		t.Errorf("data_parallel_size 2 sustains %.2f times the throughput of 1 (%.0f against %.0f tokens/s), want close to 2", r, tput[2], tput[1])
	}
}
