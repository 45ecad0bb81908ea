package sim

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAnswerEditRateGrowsAsPrecisionFalls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		quantization string
		kv           string
		checkpoint   string
		want         float64
	}{
		{name: "full precision", quantization: "none", kv: "auto", want: AnswerBaseEditRate},
		{name: "unset", want: AnswerBaseEditRate},
		{name: "fp8 weights", quantization: "fp8", want: AnswerBaseEditRate + 0.002},
		{name: "fp8 weights and kv cache", quantization: "fp8", kv: "fp8", want: AnswerBaseEditRate + 0.004},
		{name: "int8", quantization: "int8", want: AnswerBaseEditRate + 0.010},
		{name: "awq", quantization: "awq", want: AnswerBaseEditRate + 0.024},
		{name: "awq marlin kernel, same weights", quantization: "awq_marlin", want: AnswerBaseEditRate + 0.024},
		{name: "gptq", quantization: "gptq", want: AnswerBaseEditRate + 0.040},
		{name: "round to nearest", quantization: "bitsandbytes", want: AnswerBaseEditRate + 0.048},
		{name: "kv e5m2", kv: "fp8_e5m2", want: AnswerBaseEditRate + 0.005},
		{name: "an awq checkpoint served as it is", quantization: "none", checkpoint: "awq", want: AnswerBaseEditRate + 0.024},
		{name: "an awq checkpoint with the marlin kernel", quantization: "awq_marlin", checkpoint: "awq", want: AnswerBaseEditRate + 0.024},
		{name: "ollama kv q8_0", kv: "q8_0", want: AnswerBaseEditRate + 0.002},
		{name: "ollama kv q4_0", kv: "q4_0", want: AnswerBaseEditRate + 0.008},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := AnswerModel{Quantization: tt.quantization, KVCacheDtype: tt.kv, Checkpoint: tt.checkpoint}.EditRate()
			if err != nil {
				t.Fatal(err)
			}
			if d := got - tt.want; d > 1e-15 || d < -1e-15 {
				t.Errorf("EditRate = %v; want %v", got, tt.want)
			}
		})
	}
	for _, m := range []AnswerModel{{Quantization: "mystery"}, {KVCacheDtype: "int3"}} {
		if _, err := m.EditRate(); err == nil {
			t.Errorf("EditRate of %+v: nil error; want one for an unmodelled precision", m)
		}
	}
}

func TestAnswerIsDeterministicAndNested(t *testing.T) {
	t.Parallel()
	ref := strings.Repeat("田中様は注文番号A-1043のコーヒーメーカーが未着であると問い合わせています。", 20)
	answer := func(q string, seed uint64) string {
		t.Helper()
		out, err := AnswerModel{Quantization: q, Seed: seed}.Answer("ja-01", "prompt", ref)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if diff := cmp.Diff(answer("awq", 1), answer("awq", 1)); diff != "" {
		t.Errorf("two answers of the same configuration differ (-first +second):\n%s", diff)
	}
	if answer("awq", 1) == answer("awq", 2) {
		t.Error("answers do not depend on the seed")
	}
	// A higher rate edits every position a lower one edits: count the positions where the
	// edit decision differs, by replaying the draws.
	none, fp8, awq := changed(ref, 0.02), changed(ref, 0.022), changed(ref, 0.044)
	for i := range none {
		if none[i] && !fp8[i] || fp8[i] && !awq[i] {
			t.Fatalf("position %d edited at a lower rate but not at a higher one", i)
		}
	}
	edited := func(c []bool) (n int) {
		for _, b := range c {
			if b {
				n++
			}
		}
		return n
	}
	if !(edited(none) <= edited(fp8) && edited(fp8) < edited(awq)) {
		t.Errorf("edited positions none %d, fp8 %d, awq %d; want growing", edited(none), edited(fp8), edited(awq))
	}
	// The share of edited characters is near the rate (1,240 characters: a binomial with
	// standard deviation under 0.6%).
	if share := float64(edited(awq)) / float64(len([]rune(ref))); share < 0.044-0.02 || share > 0.044+0.02 {
		t.Errorf("awq edited %.3f of the characters; want about 0.044", share)
	}
	if answer("none", 1) == ref || answer("awq", 1) == answer("none", 1) {
		t.Error("full precision reproduces the reference exactly, or awq answers as full precision does")
	}
}

// changed replays answerPerturb's draws for the item of TestAnswerIsDeterministicAndNested
// and reports which positions are edited at rate.
func changed(ref string, rate float64) []bool {
	rng := answerItemRand(1, "edit", "ja-01", ref)
	runes := []rune(ref)
	out := make([]bool, len(runes))
	for i := range runes {
		u, _, _ := rng.Float64(), rng.Float64(), rng.IntN(len(runes))
		out[i] = u < rate
	}
	return out
}

func TestAnswerWithoutReferenceDerivesFromThePrompt(t *testing.T) {
	t.Parallel()
	m := AnswerModel{Seed: 5}
	tests := []struct {
		name, prompt string
	}{
		{name: "english", prompt: "Please summarise the customer's request about a missing parcel in one sentence."},
		{name: "japanese without spaces", prompt: "荷物が届かないという問い合わせを一文で要約してください。"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := AnswerPseudo("x", tt.prompt, 5)
			if p == "" || p != AnswerPseudo("x", tt.prompt, 5) {
				t.Fatalf("AnswerPseudo = %q; want a non-empty, repeatable answer", p)
			}
			for _, r := range strings.ReplaceAll(p, " ", "") {
				if !strings.ContainsRune(tt.prompt, r) {
					t.Errorf("pseudo-answer %q has %q, which is not in the prompt", p, r)
				}
			}
			a, err := m.Answer("x", tt.prompt, "")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := m.Answer("x", tt.prompt, "")
			if a != b {
				t.Errorf("answers without a reference differ: %q, %q", a, b)
			}
		})
	}
	if got := AnswerPseudo("x", "   ", 5); got != "" {
		t.Errorf("AnswerPseudo of a blank prompt = %q; want empty", got)
	}
}

func TestAnswerModelFromSettings(t *testing.T) {
	t.Parallel()
	got := AnswerModelFromSettings(map[string]any{"quantization": "fp8", "kv_cache_dtype": "fp8_e5m2", "max_num_seqs": int64(4)}, 9)
	if diff := cmp.Diff(AnswerModel{Quantization: "fp8", KVCacheDtype: "fp8_e5m2", Seed: 9}, got); diff != "" {
		t.Errorf("AnswerModelFromSettings (-want +got):\n%s", diff)
	}
	got = AnswerModelFromSettings(map[string]any{"kv_cache_type": "q8_0"}, 2)
	if diff := cmp.Diff(AnswerModel{KVCacheDtype: "q8_0", Seed: 2}, got); diff != "" {
		t.Errorf("AnswerModelFromSettings of Ollama's kv_cache_type (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(AnswerModel{Seed: 1}, AnswerModelFromSettings(nil, 1)); diff != "" {
		t.Errorf("AnswerModelFromSettings(nil) (-want +got):\n%s", diff)
	}
}
