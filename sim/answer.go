package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
)

// This file is the simulator's answer model: how a serving configuration's numeric precision
// changes what a model answers, so that quality gates can be exercised without a GPU. Every
// answer it gives is simulated and must be labelled so wherever it is shown.
//
// The model. An item's answer at full precision is its reference (or, without a reference, a
// pseudo-answer derived deterministically from the prompt), with a small share of its
// characters edited: the model is not the reference's author. Lower precision edits more
// characters. Each character position draws its random numbers from a generator seeded by
// the item and the study's seed only, never by the configuration, and is edited when its draw
// falls below the configuration's edit rate. So the same configuration always gives the same
// answer, and a configuration with a higher rate edits every character a lower rate edits,
// and more: precision is the only thing that differs between two configurations' answers.
//
// The rates are assumptions, anchored to published accuracy deltas and scaled so that one
// percent of relative perplexity increase adds one percent of edited characters:
//
//   - Full precision (bf16/fp16): 2% of characters differ from the reference
//     (AnswerBaseEditRate; an assumption about the model, not about precision).
//   - FP8 weights and activations (fp8, fbgemm_fp8, modelopt, ...): +0.2%. Kurtic et al.,
//     "Give Me BF16 or Give Me Death? Accuracy-Performance Trade-Offs in LLM Quantization"
//     (2024, arXiv:2411.02355) find W8A8-FP8 essentially lossless across Llama 3.1 sizes.
//   - INT8 weights and activations (int8, experts_int8, ...): +1%. The same study finds
//     1-3% accuracy loss for tuned W8A8-INT8.
//   - 4-bit weights with activation-aware scaling (awq, awq_marlin): +2.4%. Lin et al., "AWQ"
//     (MLSys 2024, arXiv:2306.00978), Llama-2-7B WikiText-2 perplexity 5.47 (FP16) to 5.60
//     (INT4, group 128).
//   - 4-bit GPTQ (gptq, gptq_marlin, ...) and other calibrated 4-bit formats (gguf, fp4
//     formats): +4%, from GPTQ's 5.69 in the same table.
//   - 4-bit round-to-nearest (bitsandbytes, hqq, rtn): +4.8%, from RTN's 5.73 in the same
//     table.
//   - FP8 KV cache: +0.2% for fp8/fp8_e4m3 (vLLM documents FP8 E4M3 KV caches as having
//     minimal accuracy impact), +0.5% for fp8_e5m2, which keeps one mantissa bit fewer.
//     Ollama's KV cache types: +0.2% for q8_0 and +0.8% for q4_0 (Ollama's FAQ: q8_0 has a
//     very small loss of precision, q4_0 a small to medium one).
//
// What the model leaves out: answers do not diverge after a first different token as greedy
// decoding really does; edits are character-level and uniform over the text; max_tokens and
// the tokenizer play no part.

// AnswerBaseEditRate is the share of characters of a full-precision answer that differ from
// the reference.
const AnswerBaseEditRate = 0.02

// AnswerModel answers evaluation items as a configuration with the given precision would.
type AnswerModel struct {
	// Quantization is vLLM's --quantization value; "" or "none" is full precision.
	Quantization string
	// KVCacheDtype is vLLM's --kv-cache-dtype value; "" or "auto" follows the weights.
	KVCacheDtype string
	// Checkpoint is the checkpoint's own quantisation method (Arch.QuantMethod), or "". As in
	// vLLM, it applies when Quantization is unset or "none".
	Checkpoint string
	// Seed is the study's seed; answers depend on it and on the item, not on the precision.
	Seed uint64
}

// AnswerModelFromSettings returns the answer model of a trial's settings (knob name to
// value): "quantization" and "kv_cache_dtype" (or Ollama's "kv_cache_type"), when present,
// set the precision.
func AnswerModelFromSettings(settings map[string]any, seed uint64) AnswerModel {
	m := AnswerModel{Seed: seed}
	if v, ok := settings["quantization"]; ok && v != nil {
		m.Quantization = fmt.Sprint(v)
	}
	if v, ok := settings["kv_cache_dtype"]; ok && v != nil {
		m.KVCacheDtype = fmt.Sprint(v)
	} else if v, ok := settings["kv_cache_type"]; ok && v != nil {
		m.KVCacheDtype = fmt.Sprint(v) // Ollama's OLLAMA_KV_CACHE_TYPE: f16, q8_0, q4_0
	}
	return m
}

// AnswerWeightEditRate returns the share of characters that quantization adds to the edits
// of a full-precision answer, or an error for a method the model does not know.
func AnswerWeightEditRate(quantization string) (float64, error) {
	switch strings.ToLower(quantization) {
	case "", "none", "auto", "bf16", "bfloat16", "fp16", "float16", "half":
		return 0, nil
	case "fp8", "ptpc_fp8", "fbgemm_fp8", "modelopt", "compressed-tensors", "quark", "deepspeedfp":
		return 0.002, nil
	case "int8", "experts_int8", "tpu_int8", "w8a8", "smoothquant", "inc":
		return 0.010, nil
	case "awq", "awq_marlin", "cpu_awq":
		return 0.024, nil
	case "gptq", "gptq_marlin", "gptq_marlin_24", "gptq_bitblas", "bitblas", "cpu_gptq",
		"moe_wna16", "auto-round", "gguf", "int4", "w4a16", "mxfp4", "modelopt_fp4",
		"petit_nvfp4", "fp_quant":
		return 0.040, nil
	case "bitsandbytes", "hqq", "rtn":
		return 0.048, nil
	}
	return 0, fmt.Errorf("answer model: quantization %q is not modelled; known: none, fp8, int8, awq, gptq, gguf, bitsandbytes and their vLLM variants", quantization)
}

// AnswerKVEditRate returns the share of characters that a KV-cache dtype adds to the edits
// of a full-precision answer, or an error for a dtype the model does not know.
func AnswerKVEditRate(kvCacheDtype string) (float64, error) {
	switch strings.ToLower(kvCacheDtype) {
	case "", "auto", "bfloat16", "float16", "fp16", "bf16", "f16":
		return 0, nil
	case "fp8", "fp8_e4m3", "fp8_inc", "fp8_ds_mla", "q8_0":
		return 0.002, nil
	case "fp8_e5m2":
		return 0.005, nil
	case "q4_0":
		return 0.008, nil
	}
	return 0, fmt.Errorf("answer model: kv_cache_dtype %q is not modelled; known: auto, fp8, fp8_e4m3, fp8_e5m2 (vLLM), f16, q8_0, q4_0 (Ollama)", kvCacheDtype)
}

// EditRate returns the share of an answer's characters that differ from the reference under
// m's precision: AnswerBaseEditRate plus what the weights and the KV cache add.
func (m AnswerModel) EditRate() (float64, error) {
	q := m.Quantization
	if (q == "" || strings.EqualFold(q, "none")) && m.Checkpoint != "" {
		q = m.Checkpoint
	}
	w, err := AnswerWeightEditRate(q)
	if err != nil {
		return 0, err
	}
	kv, err := AnswerKVEditRate(m.KVCacheDtype)
	if err != nil {
		return 0, err
	}
	return AnswerBaseEditRate + w + kv, nil
}

// Answer returns the simulated answer to the item named id with the given prompt and
// reference. Without a reference, the answer is derived from the prompt (AnswerPseudo).
func (m AnswerModel) Answer(id, prompt, reference string) (string, error) {
	rate, err := m.EditRate()
	if err != nil {
		return "", err
	}
	text := reference
	if text == "" {
		text = AnswerPseudo(id, prompt, m.Seed)
	}
	return answerPerturb(text, rate, answerItemRand(m.Seed, "edit", id, text)), nil
}

// AnswerPseudo returns a deterministic stand-in answer for an item without a reference:
// the prompt's words (or, for text without spaces, its characters) rotated by an offset
// drawn from the item's seed, at most 80 of them.
func AnswerPseudo(id, prompt string, seed uint64) string {
	const most = 80
	words := strings.Fields(prompt)
	sep := " "
	if len(words) < 4 {
		words = nil
		for _, r := range strings.Join(strings.Fields(prompt), "") {
			words = append(words, string(r))
		}
		sep = ""
	}
	if len(words) == 0 {
		return ""
	}
	k := answerItemRand(seed, "pseudo", id, prompt).IntN(len(words))
	rotated := append(append([]string{}, words[k:]...), words[:k]...)
	if len(rotated) > most {
		rotated = rotated[:most]
	}
	return strings.Join(rotated, sep)
}

// answerItemRand returns a generator seeded by the study's seed and the item alone.
func answerItemRand(seed uint64, purpose, id, text string) *rand.Rand {
	h := fnv.New64a()
	for _, s := range []string{purpose, id, text} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// answerPerturb edits text: each character is edited when its draw falls below rate, by a
// substitution with another character of the text (half of the edits), a deletion (a
// quarter) or an insertion after it (a quarter). Every position draws the same three numbers
// whatever the rate, so a higher rate edits a superset of the positions a lower one does.
func answerPerturb(text string, rate float64, rng *rand.Rand) string {
	runes := []rune(text)
	if len(runes) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + 8)
	for _, r := range runes {
		u, kind, pick := rng.Float64(), rng.Float64(), rng.IntN(len(runes))
		if u >= rate {
			b.WriteRune(r)
			continue
		}
		other := runes[pick]
		switch {
		case kind < 0.5:
			if other == r {
				other = runes[(pick+1)%len(runes)]
			}
			b.WriteRune(other)
		case kind < 0.75:
			// deleted
		default:
			b.WriteRune(r)
			b.WriteRune(other)
		}
	}
	return b.String()
}
