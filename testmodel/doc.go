// Package testmodel writes small llama-architecture models with random weights as GGUF files,
// so that a real engine (Ollama's llama.cpp runner) can serve real token generation on a CPU
// in tests and demos without downloading a model.
//
// A model is fully determined by its Config: the same Config gives the same bytes. Its
// vocabulary is SentencePiece-style (tokenizer model "llama"): three control tokens, the 256
// byte-fallback tokens <0x00>..<0xFF>, the "▁" word boundary, printable ASCII characters and
// then merges of them, so any text can be tokenized. The weights are random, so the text it
// generates is noise; the model never emits its end-of-sequence token, so a generation runs
// until its token limit, which makes output lengths exact.
//
// The package writes files and nothing else: serving them is the launcher's ollama adapter.
package testmodel
