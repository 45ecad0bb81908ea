package quality

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/frontier-llm/frontier/sim"
)

// Deterministic generation: every configuration is asked with the same settings.
const (
	// GenerationSeed is the seed sent with every evaluation request.
	GenerationSeed = 1
	// DefaultMaxTokens caps an answer when its item sets no max_tokens.
	DefaultMaxTokens = 512
)

// Generator answers evaluation items. Generation is deterministic: greedy (temperature 0)
// with GenerationSeed, the same for every configuration.
type Generator interface {
	// Generate returns the answer to item.
	Generate(ctx context.Context, item Item) (string, error)
	// Simulated reports whether the answers come from the simulator's answer model.
	Simulated() bool
}

// HTTPGenerator asks an OpenAI-compatible server: /v1/chat/completions for items with
// messages, /v1/completions for items with a prompt, without streaming.
type HTTPGenerator struct {
	url     string
	model   string
	options map[string]any
	apiKey  string
	client  *http.Client
	// Timeout bounds one request; 0 means none beyond the context's.
	Timeout time.Duration
}

// NewHTTPGenerator returns a generator for the server at url (e.g. "http://127.0.0.1:8000")
// serving model. options are extra top-level fields every request carries (an engine's
// request options, such as Ollama's "options"); they cannot override the model, the input,
// temperature, seed or max_tokens. apiKey, when not empty, is sent as a bearer token and
// never appears in errors.
func NewHTTPGenerator(url, model string, options map[string]any, apiKey string) *HTTPGenerator {
	return &HTTPGenerator{
		url:     strings.TrimSuffix(url, "/"),
		model:   model,
		options: options,
		apiKey:  apiKey,
		client:  &http.Client{},
		Timeout: 5 * time.Minute,
	}
}

// Simulated reports false: the answers come from a real server.
func (g *HTTPGenerator) Simulated() bool { return false }

// Generate asks the server for item's answer.
func (g *HTTPGenerator) Generate(ctx context.Context, item Item) (string, error) {
	body := make(map[string]any, len(g.options)+6)
	for k, v := range g.options {
		body[k] = v
	}
	maxTokens := item.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	body["model"] = g.model
	body["temperature"] = 0
	body["seed"] = GenerationSeed
	body["max_tokens"] = maxTokens
	body["stream"] = false
	path := "/v1/completions"
	if item.Messages != nil {
		path = "/v1/chat/completions"
		body["messages"] = item.Messages
		delete(body, "prompt")
	} else {
		body["prompt"] = item.Prompt
		delete(body, "messages")
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("%s: encoding the request: %w", item.where(), err)
	}
	if g.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.url+path, bytes.NewReader(payload))
	if err != nil {
		return "", fmt.Errorf("%s: %w", item.where(), err)
	}
	req.Header.Set("Content-Type", "application/json")
	if g.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+g.apiKey)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s: %w", item.where(), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", fmt.Errorf("%s: reading the answer: %w", item.where(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: POST %s: %s: %s", item.where(), path, resp.Status, snippet(data))
	}
	var out struct {
		Choices []struct {
			Text    *string `json:"text"`
			Message *struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("%s: POST %s: the answer is not JSON: %w", item.where(), path, err)
	}
	if len(out.Choices) == 0 {
		return "", fmt.Errorf("%s: POST %s: the answer has no choices: %s", item.where(), path, snippet(data))
	}
	c := out.Choices[0]
	switch {
	case c.Message != nil && c.Message.Content != nil:
		return *c.Message.Content, nil
	case c.Text != nil:
		return *c.Text, nil
	}
	return "", fmt.Errorf("%s: POST %s: the first choice has neither message.content nor text", item.where(), path)
}

// snippet returns the start of a response body, for error messages.
func snippet(b []byte) string {
	const most = 300
	s := strings.TrimSpace(string(b))
	if len(s) > most {
		s = s[:most] + "..."
	}
	return s
}

// SimGenerator answers with the simulator's answer model (sim.AnswerModel); its answers
// are simulated.
type SimGenerator struct {
	model sim.AnswerModel
}

// NewSimGenerator returns a generator that answers as a configuration with settings (a
// trial's knob values; "quantization" and "kv_cache_dtype" matter) would, according to the
// simulator's answer model. seed is the study's seed: the same for every configuration.
func NewSimGenerator(settings map[string]any, seed uint64) *SimGenerator {
	return &SimGenerator{model: sim.AnswerModelFromSettings(settings, seed)}
}

// NewSimGeneratorFor returns a generator that answers with the given answer model, for
// callers that know more than a trial's settings (a checkpoint's own quantisation, say).
func NewSimGeneratorFor(m sim.AnswerModel) *SimGenerator {
	return &SimGenerator{model: m}
}

// Simulated reports true.
func (g *SimGenerator) Simulated() bool { return true }

// Generate returns the simulated answer to item.
func (g *SimGenerator) Generate(ctx context.Context, item Item) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	out, err := g.model.Answer(item.ID, item.Text(), item.Reference)
	if err != nil {
		return "", fmt.Errorf("%s: %w", item.where(), err)
	}
	return out, nil
}
