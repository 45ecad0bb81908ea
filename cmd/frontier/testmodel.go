package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/frontier-llm/frontier/testmodel"
)

// cmdTestmodel writes a small random llama GGUF model: the model that Ollama serves in tests
// and in examples/ollama-cpu.hcl.
func cmdTestmodel(_ context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier testmodel", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	out := fs.String("o", "", "write the model to `FILE` (required)")
	var cfg testmodel.Config
	fs.IntVar(&cfg.Layers, "layers", testmodel.DefaultLayers, "transformer blocks")
	fs.IntVar(&cfg.Embedding, "embedding", testmodel.DefaultEmbedding, "embedding length")
	fs.IntVar(&cfg.Heads, "heads", testmodel.DefaultHeads, "attention heads (quantised KV caches need embedding/heads to be a multiple of 32)")
	fs.IntVar(&cfg.FFN, "ffn", testmodel.DefaultFFN, "feed-forward length")
	fs.IntVar(&cfg.Context, "context", testmodel.DefaultContext, "context length")
	fs.IntVar(&cfg.Vocab, "vocab", testmodel.DefaultVocab, fmt.Sprintf("vocabulary size, at least %d", testmodel.MinVocab))
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed of the random weights: the same flags give the same file")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier testmodel -o FILE [--layers N --embedding N --heads N --ffn N --context N --vocab N] [--seed S]")
		fmt.Fprintln(fs.Output())
		fmt.Fprintln(fs.Output(), "Writes a small llama-architecture GGUF model with random weights, for Ollama.")
		fmt.Fprintln(fs.Output())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	switch {
	case fs.NArg() > 0:
		return invalidf("unexpected argument %q", fs.Arg(0))
	case *out == "":
		return invalidf("-o FILE is required")
	}
	if err := cfg.Validate(); err != nil {
		return invalid(err)
	}
	if err := testmodel.WriteFile(*out, cfg); err != nil {
		return err
	}
	st, err := os.Stat(*out)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "wrote %s (%d bytes, %d layers, embedding %d, %d heads of %d, ffn %d, context %d, vocab %d, seed %d)\n",
		*out, st.Size(), cfg.Layers, cfg.Embedding, cfg.Heads, cfg.HeadSize(), cfg.FFN, cfg.Context, cfg.Vocab, cfg.Seed)
	return err
}
