package testmodel

import (
	"bytes"
	"crypto/sha256"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ollama/ollama/fs/ggml"
)

// memFile is an in-memory io.WriteSeeker.
type memFile struct {
	buf []byte
	off int64
}

func (m *memFile) Write(p []byte) (int, error) {
	if end := m.off + int64(len(p)); end > int64(len(m.buf)) {
		m.buf = append(m.buf, make([]byte, end-int64(len(m.buf)))...)
	}
	copy(m.buf[m.off:], p)
	m.off += int64(len(p))
	return len(p), nil
}

func (m *memFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case 0:
		m.off = offset
	case 1:
		m.off += offset
	case 2:
		m.off = int64(len(m.buf)) + offset
	}
	return m.off, nil
}

func model(t *testing.T, c Config) []byte {
	t.Helper()
	var f memFile
	if err := Write(&f, c); err != nil {
		t.Fatal(err)
	}
	return f.buf
}

func TestWriteIsDeterministic(t *testing.T) {
	t.Parallel()
	a := model(t, Config{Seed: 7})
	b := model(t, Config{Seed: 7})
	if !bytes.Equal(a, b) {
		t.Fatalf("two models of the same config differ: %x vs %x", sha256.Sum256(a), sha256.Sum256(b))
	}
	if c := model(t, Config{Seed: 8}); bytes.Equal(a, c) {
		t.Fatal("models with seeds 7 and 8 are identical")
	}
}

func TestWriteDecodesAsLlama(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want map[string]any
	}{
		{
			name: "defaults",
			cfg:  Config{},
			want: map[string]any{
				"arch": "llama", "blocks": uint64(2), "embedding": uint64(64), "heads": uint64(2),
				"ctx": uint64(512), "vocab": 512, "tensors": 3 + 2*9, "file_type": "F16",
			},
		},
		{
			name: "bigger",
			cfg:  Config{Layers: 3, Embedding: 128, Heads: 4, FFN: 256, Context: 1024, Vocab: 1000, Seed: 3},
			want: map[string]any{
				"arch": "llama", "blocks": uint64(3), "embedding": uint64(128), "heads": uint64(4),
				"ctx": uint64(1024), "vocab": 1000, "tensors": 3 + 3*9, "file_type": "F16",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := model(t, tt.cfg)
			g, _, err := ggml.Decode(bytes.NewReader(b), -1)
			if err != nil {
				t.Fatal(err)
			}
			kv := g.KV()
			got := map[string]any{
				"arch": kv.Architecture(), "blocks": kv.BlockCount(), "embedding": kv.EmbeddingLength(),
				"heads": kv.HeadCount(), "ctx": kv.ContextLength(), "vocab": len(kv.Strings("tokenizer.ggml.tokens")),
				"tensors": len(g.Tensors().Items()), "file_type": kv.FileType().String(),
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decoded model (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVocabulary(t *testing.T) {
	t.Parallel()
	tokens, scores, types := vocabulary(DefaultVocab)
	if len(basePieces()) != MinVocab {
		t.Errorf("MinVocab = %d, base pieces = %d", MinVocab, len(basePieces()))
	}
	got := map[string]any{
		"unk": tokens[UnknownID], "bos": tokens[BOSID], "eos": tokens[EOSID],
		"first byte": tokens[3], "last byte": tokens[3+255], "byte type": types[3+0x41],
		"space": tokens[259], "len": len(tokens), "scores": len(scores),
	}
	want := map[string]any{
		"unk": "<unk>", "bos": "<s>", "eos": "</s>", "first byte": "<0x00>", "last byte": "<0xFF>",
		"byte type": int32(tokenByte), "space": "▁", "len": DefaultVocab, "scores": DefaultVocab,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("vocabulary (-want +got):\n%s", diff)
	}
	seen := map[string]int{}
	for i, tok := range tokens {
		if j, ok := seen[tok]; ok {
			t.Errorf("token %q at %d and %d", tok, j, i)
		}
		seen[tok] = i
		// Every merged piece must be reachable: some split of it into two known pieces.
		if types[i] != tokenNormal || len([]rune(tok)) < 2 {
			continue
		}
		r := []rune(tok)
		reachable := false
		for k := 1; k < len(r); k++ {
			_, a := seen[string(r[:k])]
			_, b := seen[string(r[k:])]
			reachable = reachable || a && b
		}
		if !reachable {
			t.Errorf("token %q cannot be merged from earlier tokens", tok)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string // a substring of the error; "" for none
	}{
		{"defaults", Config{}, ""},
		{"heads do not divide embedding", Config{Embedding: 64, Heads: 3}, "multiple of heads"},
		{"odd head size", Config{Embedding: 6, Heads: 2}, "must be even"},
		{"vocab too small", Config{Vocab: 100}, "vocab must be at least 354"},
		{"negative layers", Config{Layers: -1}, "layers"},
		{"tiny context", Config{Context: 4}, "context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tt.want == "" && err != nil || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("Validate() = %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

func TestFloat16(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   float32
		want uint16
	}{
		{0, 0x0000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.5, 0x3800},
		{65504, 0x7bff},
		{1e6, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{5.960464477539063e-08, 0x0001}, // smallest subnormal
		{6.103515625e-05, 0x0400},       // smallest normal
		{1e-9, 0x0000},
		{0.1, 0x2e66},
		{1.0009765625, 0x3c01},
	}
	for _, tt := range tests {
		if got := float16(tt.in); got != tt.want {
			t.Errorf("float16(%g) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
}

func TestWriteFileLeavesNothingOnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	if err := WriteFile(path, Config{Vocab: 10}); err == nil {
		t.Fatal("WriteFile with vocab 10 succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
	if err := WriteFile(path, Config{}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < 100_000 || st.Size() > 2_000_000 {
		t.Errorf("default model is %d bytes, want about 0.3-0.6 MB", st.Size())
	}
}
