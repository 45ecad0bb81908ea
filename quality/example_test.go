package quality_test

import (
	"context"
	"fmt"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/quality"
)

// chrF as sacrebleu computes it by default, on 0..1; per sentence and over a corpus.
func ExampleChrF() {
	fmt.Printf("%.4f\n", quality.ChrF("東京", "東京都"))
	corpus, sentences := quality.CorpusChrF([]string{"東京", "山田さんへ"}, []string{"東京都", "山田様へ"})
	fmt.Printf("%.4f %.4f\n", corpus, sentences)
	// Output:
	// 0.6364
	// 0.2786 [0.6364 0.2567]
}

// ROUGE-L on words, and on characters for Japanese.
func ExampleRougeL() {
	fmt.Printf("%.4f\n", quality.RougeL("police kill the gunman", "police killed the gunman"))
	fmt.Printf("%.4f\n", quality.RougeL("東京に住んでいる", "東京都に住む"))
	// Output:
	// 0.7500
	// 0.5714
}

// A judge's reply, read into a score on 0..1.
func ExampleParseVerdict() {
	for _, reply := range []string{"The name is kept.\nScore: 4/5", `{"score": 0.35}`, "3", "Score: 7/5"} {
		s, err := quality.ParseVerdict(reply)
		fmt.Println(s, err)
	}
	// Output:
	// 0.8 <nil>
	// 0.35 <nil>
	// 0.6 <nil>
	// 0 the judge's score is out of range: 7/5 is above the top of its scale
}

// A study's quality gate on the simulator: the baseline configuration is evaluated once,
// then each trial's configuration, and the gate compares the two scores.
func ExampleGate() {
	items, err := quality.LoadSet("testdata/ja-support.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	maxDrop := 0.02
	gate := plan.QualityGate{Name: "ja_support", Scorer: quality.ScorerChrF, MaxDrop: &maxDrop,
		Baseline: plan.Config{"quantization": "none"}}
	ctx := context.Background()
	base, err := quality.Evaluate(ctx, gate, items, quality.NewSimGenerator(gate.Baseline, 1), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, q := range []string{"fp8", "awq"} {
		o, err := quality.Evaluate(ctx, gate, items, quality.NewSimGenerator(plan.Config{"quantization": q}, 1), base)
		if err != nil {
			fmt.Println(err)
			return
		}
		passed, reason := quality.Gate(gate, o.Score, base.Score)
		fmt.Printf("%s %.4f simulated=%v passed=%v\n", q, o.Score, o.Simulated, passed)
		if reason != "" {
			fmt.Println(reason)
		}
	}
	// Output:
	// fp8 0.9347 simulated=true passed=true
	// awq 0.8697 simulated=true passed=false
	// quality "ja_support": score 0.8697 is 7.90% below the baseline's 0.9444 (max_drop 2%)
}
