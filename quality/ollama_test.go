package quality

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/launcher"
	"github.com/frontier-llm/frontier/launcher/ollamatest"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/testmodel"
)

// TestRealOllamaAnswersAndJudgesDeterministically runs a real `ollama serve` on loopback
// with a small random model (testmodel): the OpenAI-compatible generator must get the same
// answer twice for a chat and for a prompt (temperature 0, fixed seed), and the judge, asked
// through Ollama's own API, must come back with a usable verdict or a verdict error for the
// item, the same both times; a random model's reply is rarely a verdict.
func TestRealOllamaAnswersAndJudgesDeterministically(t *testing.T) {
	t.Parallel()
	bin := ollamatest.Binary(t, "..")
	dir := t.TempDir()
	gguf := filepath.Join(dir, "tiny.gguf")
	if err := testmodel.WriteFile(gguf, testmodel.Config{}); err != nil {
		t.Fatal(err)
	}
	spec := launcher.Spec{
		Command:        []string{bin, "serve"},
		Model:          "tiny",
		GGUF:           gguf,
		Settings:       []launcher.Setting{{Name: "num_thread", Value: int64(1)}, {Name: "num_ctx", Value: int64(256)}},
		LogPath:        filepath.Join(dir, "ollama.log"),
		WorkDir:        dir,
		StartupTimeout: time.Minute,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst, err := launcher.NewOllama(launcher.Options{GracePeriod: 5 * time.Second}).Start(ctx, spec)
	if err != nil {
		log, _ := os.ReadFile(spec.LogPath)
		t.Fatalf("Start: %v\nlog:\n%s", err, log)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := inst.Stop(sctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})

	gen := NewHTTPGenerator(inst.URL(), inst.ServedModel(), inst.RequestOptions(), "")
	items := []Item{
		{ID: "chat", Messages: []Message{{"user", "Summarise: the parcel has not arrived."}}, MaxTokens: 12},
		{ID: "prompt", Prompt: "The quick brown fox", MaxTokens: 12},
	}
	for _, it := range items {
		first, err := gen.Generate(ctx, it)
		if err != nil {
			t.Fatalf("%s: %v", it.ID, err)
		}
		second, err := gen.Generate(ctx, it)
		if err != nil {
			t.Fatalf("%s: %v", it.ID, err)
		}
		if first == "" || first != second {
			t.Errorf("%s: answers %q and %q; want the same non-empty answer twice", it.ID, first, second)
		}
	}

	judge, err := NewJudge(inst.URL(), inst.ServedModel(), "Mentions the parcel.")
	if err != nil {
		t.Fatal(err)
	}
	rate := func() (float64, error) {
		s, err := judge.Rate(ctx, Item{ID: "j", Prompt: "Where is my parcel?", Reference: "It is on its way."}, "It ships tomorrow.")
		if err != nil && !errors.Is(err, ErrVerdictUnparseable) && !errors.Is(err, ErrVerdictOutOfRange) {
			t.Fatalf("Rate: %v; want a score or a verdict error", err)
		}
		if err == nil && (s < 0 || s > 1) {
			t.Errorf("Rate = %v; want a score in 0..1", s)
		}
		return s, err
	}
	s1, err1 := rate()
	s2, err2 := rate()
	if s1 != s2 || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
		t.Errorf("the judge answered differently: (%v, %v) then (%v, %v)", s1, err1, s2, err2)
	}

	// Through Score, an unusable verdict is an item error, not a crash.
	gate := plan.QualityGate{Scorer: ScorerJudge, JudgeModel: inst.ServedModel(), JudgeURL: inst.URL()}
	o, err := Score(ctx, gate, []Item{{ID: "j", Prompt: "Where is my parcel?"}}, []string{"It ships tomorrow."}, nil)
	switch {
	case err1 == nil && err != nil:
		t.Errorf("Score: %v; want the judge's score", err)
	case err1 != nil && (err == nil || o != nil):
		t.Errorf("Score = %+v, %v; want the error that no item could be scored", o, err)
	}
}
