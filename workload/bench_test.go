package workload_test

import (
	"context"
	"testing"

	"github.com/frontier-llm/frontier/workload"
	"github.com/frontier-llm/frontier/workload/workloadtest"
)

// benchmarkRun sends b.N requests of tokens output tokens each, conc at a time, to a minimal
// streaming server in the same process, and reports requests and chunks a second. The full
// comparison with a bare HTTP loop is `go run ./cmd/loadbench`.
func benchmarkRun(b *testing.B, tokens, conc int) {
	s, err := workloadtest.Start(workloadtest.Options{Tokens: tokens, IgnoreBody: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := workload.Class{Name: "b", Requests: b.N,
		InputTokens: workload.Dist{Kind: workload.DistFixed, A: 16}, OutputTokens: workload.Dist{Kind: workload.DistFixed, A: float64(tokens)},
		Arrival: workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: conc}}
	b.ResetTimer()
	res, err := workload.Run(context.Background(), workload.Target{URL: s.URL(), Model: "m", TokenIDs: true}, []workload.Class{c}, workload.RunOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	tot := res.Measurement.Total.Metrics
	if tot[workload.Failed] > 0 {
		b.Fatalf("%v requests failed: %v", tot[workload.Failed], res.Measurement.Total.Errors)
	}
	chunks := 0
	for _, r := range res.Records {
		chunks += len(r.Chunks)
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/sec, "req/s")
	b.ReportMetric(float64(chunks)/sec, "chunks/s")
}

func BenchmarkRunShortOutputs(b *testing.B) { benchmarkRun(b, 2, 64) }

func BenchmarkRunLongOutputs(b *testing.B) { benchmarkRun(b, 2000, 16) }
