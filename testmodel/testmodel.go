package testmodel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
)

// Config describes a model. The zero value of a field means its default.
type Config struct {
	Layers    int // transformer blocks; default 2
	Embedding int // embedding length; default 64
	Heads     int // attention heads (as many KV heads); default 2
	FFN       int // feed-forward length; default 128
	Context   int // context length; default 512
	Vocab     int // vocabulary size, at least 300 (control, byte and character tokens); default 512
	Seed      uint64
}

// Default values of Config.
const (
	DefaultLayers    = 2
	DefaultEmbedding = 64
	DefaultHeads     = 2
	DefaultFFN       = 128
	DefaultContext   = 512
	DefaultVocab     = 512
)

// Token ids of the control tokens.
const (
	UnknownID = 0 // <unk>
	BOSID     = 1 // <s>
	EOSID     = 2 // </s>
)

// GGUF token types, as llama.cpp defines them.
const (
	tokenNormal  = 1
	tokenUnknown = 2
	tokenControl = 3
	tokenByte    = 6
)

// GGUF tensor kinds.
const (
	kindF32 = 0
	kindF16 = 1
)

// fileTypeF16 is general.file_type for "mostly F16".
const fileTypeF16 = 1

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Layers, DefaultLayers)
	def(&c.Embedding, DefaultEmbedding)
	def(&c.Heads, DefaultHeads)
	def(&c.FFN, DefaultFFN)
	def(&c.Context, DefaultContext)
	def(&c.Vocab, DefaultVocab)
	return c
}

// MinVocab is the smallest vocabulary: 3 control tokens, 256 bytes, "▁" and the 94
// printable ASCII characters.
const MinVocab = 3 + 256 + 1 + 94

// Validate reports the first field of c (after defaults) that cannot make a working model.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Layers < 1:
		return fmt.Errorf("layers must be at least 1, not %d", c.Layers)
	case c.Heads < 1:
		return fmt.Errorf("heads must be at least 1, not %d", c.Heads)
	case c.Embedding < 1 || c.Embedding%c.Heads != 0:
		return fmt.Errorf("embedding must be a positive multiple of heads (%d), not %d", c.Heads, c.Embedding)
	case (c.Embedding/c.Heads)%2 != 0:
		return fmt.Errorf("head size (embedding/heads = %d) must be even for rotary embeddings", c.Embedding/c.Heads)
	case c.FFN < 1:
		return fmt.Errorf("ffn must be at least 1, not %d", c.FFN)
	case c.Context < 8:
		return fmt.Errorf("context must be at least 8, not %d", c.Context)
	case c.Vocab < MinVocab:
		return fmt.Errorf("vocab must be at least %d (control, byte and character tokens), not %d", MinVocab, c.Vocab)
	}
	return nil
}

// HeadSize is the size of one attention head. Quantised KV caches need a multiple of 32.
func (c Config) HeadSize() int {
	c = c.WithDefaults()
	return c.Embedding / c.Heads
}

// Write writes the model described by c to w as GGUF.
func Write(w io.WriteSeeker, c Config) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("testmodel: %w", err)
	}
	c = c.WithDefaults()
	kv, tensors := build(c)
	if err := ggml.WriteGGUF(w, kv, tensors); err != nil {
		return fmt.Errorf("testmodel: writing GGUF: %w", err)
	}
	return nil
}

// WriteFile writes the model described by c to the file path, replacing it only once the
// whole model is written.
func WriteFile(path string, c Config) (err error) {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("testmodel: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("testmodel: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := Write(f, c); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("testmodel: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("testmodel: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("testmodel: %w", err)
	}
	return nil
}

// build returns the metadata and tensors of the model.
func build(c Config) (ggml.KV, []ggml.Tensor) {
	tokens, scores, types := vocabulary(c.Vocab)
	kv := ggml.KV{
		"general.architecture":                   "llama",
		"general.name":                           fmt.Sprintf("frontier-testmodel-%dL-%dE-%dH-seed%d", c.Layers, c.Embedding, c.Heads, c.Seed),
		"general.file_type":                      uint32(fileTypeF16),
		"llama.block_count":                      uint32(c.Layers),
		"llama.context_length":                   uint32(c.Context),
		"llama.embedding_length":                 uint32(c.Embedding),
		"llama.feed_forward_length":              uint32(c.FFN),
		"llama.attention.head_count":             uint32(c.Heads),
		"llama.attention.head_count_kv":          uint32(c.Heads),
		"llama.attention.layer_norm_rms_epsilon": float32(1e-5),
		"llama.rope.dimension_count":             uint32(c.Embedding / c.Heads),
		"llama.rope.freq_base":                   float32(10000),
		"llama.vocab_size":                       uint32(c.Vocab),
		"tokenizer.ggml.model":                   "llama",
		"tokenizer.ggml.tokens":                  tokens,
		"tokenizer.ggml.scores":                  scores,
		"tokenizer.ggml.token_type":              types,
		"tokenizer.ggml.unknown_token_id":        uint32(UnknownID),
		"tokenizer.ggml.bos_token_id":            uint32(BOSID),
		"tokenizer.ggml.eos_token_id":            uint32(EOSID),
		"tokenizer.ggml.add_bos_token":           true,
		"tokenizer.ggml.add_eos_token":           false,
	}

	r := rand.New(rand.NewPCG(c.Seed, 0x66726f6e74696572)) // "frontier"
	e, v, f := c.Embedding, c.Vocab, c.FFN
	var ts []ggml.Tensor
	mat := func(name string, rows, cols int, scale float64) {
		ts = append(ts, f16Tensor(name, rows, cols, randomMatrix(r, rows, cols, scale)))
	}
	ones := func(name string) {
		ts = append(ts, f32Tensor(name, e, filled(e, 1)))
	}

	// Dimension 0 of the residual stream is a constant positive channel: every embedding has
	// a large value there and no layer writes to it. The output rows of the control tokens
	// point against it, so their logits are always strongly negative and the model never
	// ends a generation (or emits <s>/<unk>) before its token limit.
	embd := randomMatrix(r, v, e, 1)
	for t := range v {
		embd[t*e] = 8
	}
	ts = append(ts, f16Tensor("token_embd.weight", v, e, embd))
	out := randomMatrix(r, v, e, 1/math.Sqrt(float64(e)))
	for t := range v {
		out[t*e] = 0
	}
	for _, t := range []int{UnknownID, BOSID, EOSID} {
		out[t*e] = -64
	}
	ts = append(ts, f16Tensor("output.weight", v, e, out))
	ones("output_norm.weight")

	scale := 1 / math.Sqrt(float64(e))
	for l := range c.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		ones(p + "attn_norm.weight")
		mat(p+"attn_q.weight", e, e, scale)
		mat(p+"attn_k.weight", e, e, scale)
		mat(p+"attn_v.weight", e, e, scale)
		ao := randomMatrix(r, e, e, scale)
		clear(ao[:e]) // row 0 writes to the constant channel
		ts = append(ts, f16Tensor(p+"attn_output.weight", e, e, ao))
		ones(p + "ffn_norm.weight")
		mat(p+"ffn_gate.weight", f, e, scale)
		mat(p+"ffn_up.weight", f, e, scale)
		down := randomMatrix(r, e, f, 1/math.Sqrt(float64(f)))
		clear(down[:f])
		ts = append(ts, f16Tensor(p+"ffn_down.weight", e, f, down))
	}
	return kv, ts
}

// basePieces returns the pieces every vocabulary starts with: control tokens, byte tokens,
// "▁" and printable ASCII characters, with their types.
func basePieces() []piece {
	ps := []piece{{"<unk>", tokenUnknown}, {"<s>", tokenControl}, {"</s>", tokenControl}}
	for b := range 256 {
		ps = append(ps, piece{fmt.Sprintf("<0x%02X>", b), tokenByte})
	}
	ps = append(ps, piece{"▁", tokenNormal})
	for ch := '!'; ch <= '~'; ch++ {
		ps = append(ps, piece{string(ch), tokenNormal})
	}
	return ps
}

type piece struct {
	text string
	kind int32
}

// vocabulary returns n tokens with their scores and types. After the base pieces come
// merges ("▁a", "▁b", ..., "th", "he", ...) whose halves are earlier pieces, so the
// SentencePiece merge algorithm can reach each of them; longer pieces score higher.
func vocabulary(n int) ([]string, []float32, []int32) {
	ps := basePieces()
	seen := make(map[string]bool, n)
	for _, p := range ps {
		seen[p.text] = true
	}
	letters := "etaoinshrdlcumwfgypbvkjxqz"
	var extra []string
	for _, a := range letters {
		extra = append(extra, "▁"+string(a))
	}
	for _, a := range letters {
		for _, b := range letters {
			extra = append(extra, string(a)+string(b))
		}
	}
	for _, a := range letters {
		for _, b := range letters {
			extra = append(extra, "▁"+string(a)+string(b))
		}
	}
	for i := 0; len(ps) < n; i++ {
		var text string
		if i < len(extra) {
			text = extra[i]
		} else {
			// Beyond the prepared merges: repeat pieces of earlier ones ("ee", "eee", ...).
			text = strings.Repeat(string(letters[i%len(letters)]), 3+i/len(letters))
		}
		if seen[text] {
			continue
		}
		seen[text] = true
		ps = append(ps, piece{text, tokenNormal})
	}
	tokens := make([]string, n)
	scores := make([]float32, n)
	types := make([]int32, n)
	for i, p := range ps[:n] {
		tokens[i] = p.text
		types[i] = p.kind
		if p.kind == tokenNormal {
			// SentencePiece prefers the merge with the highest score: longer pieces first.
			scores[i] = float32(len([]rune(p.text))) - float32(i)/float32(n)
		}
	}
	return tokens, scores, types
}

func randomMatrix(r *rand.Rand, rows, cols int, scale float64) []float32 {
	m := make([]float32, rows*cols)
	for i := range m {
		m[i] = float32(r.NormFloat64() * scale)
	}
	return m
}

func filled(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// f16Tensor is a rows x cols matrix stored as F16. GGUF lists a shape innermost first; the
// writer reverses Shape, so Shape is given outermost first.
func f16Tensor(name string, rows, cols int, data []float32) ggml.Tensor {
	buf := make([]byte, 2*len(data))
	for i, x := range data {
		binary.LittleEndian.PutUint16(buf[2*i:], float16(x))
	}
	return ggml.Tensor{Name: name, Kind: kindF16, Shape: []uint64{uint64(rows), uint64(cols)}, WriterTo: bytes.NewReader(buf)}
}

// f32Tensor is a vector stored as F32.
func f32Tensor(name string, n int, data []float32) ggml.Tensor {
	buf := make([]byte, 4*len(data))
	for i, x := range data {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	return ggml.Tensor{Name: name, Kind: kindF32, Shape: []uint64{uint64(n)}, WriterTo: bytes.NewReader(buf)}
}

// float16 converts x to IEEE 754 half precision, rounding to nearest even.
func float16(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case (b>>23)&0xff == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 0x1f: // overflow
		return sign | 0x7c00
	case exp <= 0: // subnormal or zero
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := uint32(1) << (shift - 1)
		rest := mant & (1<<shift - 1)
		m := mant >> shift
		if rest > half || (rest == half && m&1 == 1) {
			m++
		}
		return sign | uint16(m)
	}
	m := mant >> 13
	rest := mant & 0x1fff
	h := uint32(exp)<<10 | m
	if rest > 0x1000 || (rest == 0x1000 && m&1 == 1) {
		h++ // may carry into the exponent, which is still correct
	}
	return sign | uint16(h)
}
