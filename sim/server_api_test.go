package sim

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The tests below drive the real simulated server over loopback HTTP. The model behind it
// is the simulator's stand-in for a GPU running vLLM; what they check is the OpenAI API
// that vLLM serves, as each emulated release answers.

// errorBody is vLLM's ErrorResponse.
type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	} `json:"error"`
}

func strp(s string) *string { return &s }

// TestServerRefusesAsVLLM checks each request vLLM refuses: status, error type, param and
// message, for the current line and, where it differs, v0.13.
func TestServerRefusesAsVLLM(t *testing.T) {
	t.Parallel()
	base := []string{"llama-3.2-1b", "--sku", "h100-sxm", "--max-model-len", "4000"}
	current, _, _ := startServer(t, base...)
	v013, _, _ := startServer(t, append([]string{"--vllm-version", "0.13"}, base...)...)
	const chatTool = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	tests := []struct {
		name    string
		url     string
		path    string
		body    string
		status  int
		typ     string
		param   *string
		message string // a part of the message
	}{
		{"stream_options without stream", current, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`,
			400, "Bad Request", strp("stream_options"), "'msg': 'Value error, Stream options can only be defined when `stream=True`. (parameter=stream_options)'"},
		{"v0.13 stream_options without stream", v013, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`,
			400, "Bad Request", nil, "'ctx': {'error': ValueError('Stream options can only be defined when `stream=True`.')}"},
		{"completions stream_options without stream", current, "/v1/completions",
			`{"prompt":"hi","stream_options":{"include_usage":true}}`, 400, "Bad Request", strp("stream_options"), "Stream options can only be defined"},
		{"negative temperature", current, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],"temperature":-1}`,
			400, "BadRequestError", strp("temperature"), "temperature must be non-negative, got -1.0. (parameter=temperature, value=-1.0)"},
		{"v0.13 negative temperature", v013, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],"temperature":-1}`,
			400, "BadRequestError", nil, "temperature must be non-negative, got -1.0."},
		{"top_p zero", current, "/v1/completions", `{"prompt":"hi","top_p":0}`, 400, "BadRequestError", strp("top_p"), "top_p must be in (0, 1], got 0.0."},
		{"max_tokens zero", current, "/v1/completions", `{"prompt":"hi","max_tokens":0}`, 400, "BadRequestError", strp("max_tokens"), "max_tokens must be at least 1, got 0."},
		{"n zero", current, "/v1/completions", `{"prompt":"hi","n":0}`, 400, "BadRequestError", nil, "n must be at least 1, got 0."},
		{"n two when greedy", current, "/v1/completions", `{"prompt":"hi","n":2,"temperature":0}`, 400, "BadRequestError", nil, "n must be 1 when using greedy sampling, got 2."},
		{"presence_penalty out of range", current, "/v1/completions", `{"prompt":"hi","presence_penalty":3}`, 400, "BadRequestError", nil, "presence_penalty must be in [-2, 2], got 3.0."},
		{"top_logprobs without logprobs", current, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],"top_logprobs":2}`,
			400, "Bad Request", strp("top_logprobs"), "when using `top_logprobs`, `logprobs` must be set to true."},
		{"top_logprobs above --max-logprobs", current, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":21}`,
			400, "BadRequestError", strp("logprobs"), "Requested sample logprobs of 21, which is greater than max allowed: 20"},
		{"completions logprobs negative", current, "/v1/completions", `{"prompt":"hi","logprobs":-3}`,
			400, "Bad Request", strp("logprobs"), "`logprobs` must be a positive value."},
		{"tool_choice auto without --enable-auto-tool-choice", current, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"},` + "\n" + `{"role":"user","content":"weather?"}],` + chatTool + `,"tool_choice":"auto"}`,
			400, "BadRequestError", nil, `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`},
		{"tools without tool_choice mean auto", v013, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],` + chatTool + `}`,
			400, "BadRequestError", nil, `"auto" tool choice requires --enable-auto-tool-choice`},
		{"tool_choice required without a parser", current, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],` + chatTool + `,"tool_choice":"required"}`,
			400, "BadRequestError", nil, `tool_choice="required" requires --tool-call-parser to be set`},
		{"named tool without a parser", current, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],` + chatTool + `,"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`,
			400, "BadRequestError", nil, `tool_choice="function=ChatCompletionNamedFunction(name='get_weather') type='function'" requires --tool-call-parser to be set`},
		{"tool_choice without tools", current, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}`,
			400, "Bad Request", nil, "When using `tool_choice`, `tools` must be set."},
		{"named tool not among the tools", current, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],` + chatTool + `,"tool_choice":{"type":"function","function":{"name":"other"}}}`,
			400, "Bad Request", nil, "The tool specified in `tool_choice` does not match any of the specified `tools`"},
		{"unknown model", current, "/v1/completions", `{"model":"other","prompt":"x","max_tokens":1}`, 404, "NotFoundError", strp("model"), "The model `other` does not exist."},
		{"v0.13 unknown model", v013, "/v1/completions", `{"model":"other","prompt":"x","max_tokens":1}`, 404, "NotFoundError", nil, "The model `other` does not exist."},
		{"context length, token ids", current, "/v1/completions", `{"prompt":[1,2,3,4,5,6,7,8,9,10],"max_tokens":3995}`,
			400, "BadRequestError", strp("input_tokens"),
			"This model's maximum context length is 4000 tokens. However, you requested 3995 output tokens and your prompt contains 10 input tokens, for a total of 4005 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=10)"},
		{"context length, text", current, "/v1/completions", `{"prompt":"a b c d e f g h i j","max_tokens":3995}`,
			400, "BadRequestError", strp("input_tokens"), "your prompt contains at least 6 input tokens, for a total of at least 4001 tokens."},
		{"v0.13 context length", v013, "/v1/completions", `{"prompt":[1,2,3,4,5,6,7,8,9,10],"max_tokens":3995}`,
			400, "BadRequestError", nil, "'max_tokens' or 'max_completion_tokens' is too large: 3995. This model's maximum context length is 4000 tokens and your request has 10 input tokens (3995 > 4000 - 10)."},
		{"max_tokens above max_model_len", current, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":5000}`,
			400, "BadRequestError", strp("max_completion_tokens"), "max_completion_tokens=5000 cannot be greater than max_model_len=max_total_tokens=4000. Please request fewer output tokens."},
		{"json_schema the simulator cannot honour", current, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}}`,
			400, "BadRequestError", strp("response_format"), "The provided JSON schema contains features not supported by xgrammar."},
		{"json_schema without a schema", current, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema"}}`,
			400, "Bad Request", strp("response_format"), "When response_format type is 'json_schema', the 'json_schema' field must be provided."},
		{"beam search streamed", current, "/v1/completions", `{"prompt":"hi","use_beam_search":true,"n":2,"stream":true}`,
			400, "BadRequestError", nil, "Streaming is not currently supported with beam search"},
		{"field of the wrong type", current, "/v1/completions", `{"prompt":"hi","temperature":"hot"}`,
			400, "Bad Request", nil, "'loc': ('body', 'temperature'), 'msg': 'Input should be a valid number'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := post(t, tt.url+tt.path, tt.body)
			var got errorBody
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatalf("status %d, body %s: %v", resp.StatusCode, body, err)
			}
			if resp.StatusCode != tt.status || got.Error.Code != tt.status || got.Error.Type != tt.typ {
				t.Errorf("status %d, code %d, type %q; want %d, %q\n%s", resp.StatusCode, got.Error.Code, got.Error.Type, tt.status, tt.typ, body)
			}
			if diff := cmp.Diff(tt.param, got.Error.Param); diff != "" {
				t.Errorf("param (-want +got):\n%s", diff)
			}
			if !strings.Contains(got.Error.Message, tt.message) {
				t.Errorf("message %q\nlacks %q", got.Error.Message, tt.message)
			}
		})
	}
}

// chatResponse is the part of a chat completion the tests read.
type chatResponse struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		Logprobs *struct {
			Content []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				Bytes       []int   `json:"bytes"`
				TopLogprobs []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
				} `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage usage `json:"usage"`
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	return v
}

// TestServerAnswersAsVLLM checks what vLLM answers to n, logprobs, response_format,
// tools and stream_options that a plain request does not use.
func TestServerAnswersAsVLLM(t *testing.T) {
	t.Parallel()
	url, _, _ := startServer(t, "llama-3.2-1b", "--sku", "h100-sxm", "--max-model-len", "4000")
	v013, _, _ := startServer(t, "--vllm-version", "0.13", "llama-3.2-1b", "--sku", "h100-sxm", "--max-model-len", "4000")
	tools, _, _ := startServer(t, "llama-3.2-1b", "--sku", "h100-sxm", "--max-model-len", "4000",
		"--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--max-logprobs", "5")
	const weather = `"tools":[{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"zone":{"type":"string"}}}}},` +
		`{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"]}}}]`

	t.Run("n=2 gives two generated choices", func(t *testing.T) {
		t.Parallel()
		_, body := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"n":2,"max_tokens":5}`)
		got := decode[chatResponse](t, body)
		if len(got.Choices) != 2 || got.Choices[0].Index != 0 || got.Choices[1].Index != 1 {
			t.Fatalf("choices %s", body)
		}
		if *got.Choices[0].Message.Content == *got.Choices[1].Message.Content {
			t.Errorf("both choices say %q", *got.Choices[0].Message.Content)
		}
		if got.Usage.CompletionTokens != 10 {
			t.Errorf("completion_tokens %d, want 10 (5 per choice)", got.Usage.CompletionTokens)
		}
	})
	t.Run("n=2 streams chunks for each index", func(t *testing.T) {
		t.Parallel()
		_, body := post(t, url+"/v1/completions", `{"prompt":"hi","n":2,"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`)
		text := map[int]string{}
		finished := map[int]string{}
		var total usage
		for _, ev := range sseEvents(body) {
			if ev == "[DONE]" {
				continue
			}
			c := decode[struct {
				Choices []struct {
					Index        int     `json:"index"`
					Text         string  `json:"text"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
				Usage *usage `json:"usage"`
			}](t, ev)
			for _, ch := range c.Choices {
				text[ch.Index] += ch.Text
				if ch.FinishReason != nil {
					finished[ch.Index] = *ch.FinishReason
				}
			}
			if c.Usage != nil {
				total = *c.Usage
			}
		}
		if diff := cmp.Diff(map[int]string{0: "length", 1: "length"}, finished); diff != "" {
			t.Errorf("finish reasons (-want +got):\n%s", diff)
		}
		if len(strings.Fields(text[0])) != 3 || len(strings.Fields(text[1])) != 3 || text[0] == text[1] {
			t.Errorf("texts %v", text)
		}
		if total.CompletionTokens != 6 || total.PromptTokens != 1 {
			t.Errorf("usage %+v, want 1 prompt and 6 completion tokens", total)
		}
	})
	t.Run("chat logprobs", func(t *testing.T) {
		t.Parallel()
		_, body := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"logprobs":true,"top_logprobs":3}`)
		got := decode[chatResponse](t, body)
		lp := got.Choices[0].Logprobs
		if lp == nil || len(lp.Content) != 4 {
			t.Fatalf("logprobs %s", body)
		}
		var joined string
		for _, c := range lp.Content {
			joined += c.Token
			sum := 0.0
			if len(c.TopLogprobs) != 3 || c.TopLogprobs[0].Token != c.Token || c.Logprob >= 0 || string(rune(c.Bytes[0])) != c.Token[:1] {
				t.Errorf("entry %+v", c)
			}
			for i, a := range c.TopLogprobs {
				if i > 0 && a.Logprob >= c.TopLogprobs[i-1].Logprob {
					t.Errorf("top_logprobs not in order: %+v", c.TopLogprobs)
				}
				sum += math.Exp(a.Logprob)
			}
			if sum > 1 {
				t.Errorf("probabilities add up to %.3f", sum)
			}
		}
		if joined != *got.Choices[0].Message.Content {
			t.Errorf("tokens %q, content %q", joined, *got.Choices[0].Message.Content)
		}
	})
	t.Run("chat logprobs off is null", func(t *testing.T) {
		t.Parallel()
		_, body := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
		if !strings.Contains(body, `"logprobs":null`) {
			t.Errorf("body %s", body)
		}
	})
	t.Run("completions logprobs", func(t *testing.T) {
		t.Parallel()
		_, body := post(t, url+"/v1/completions", `{"prompt":"hi","max_tokens":3,"logprobs":2}`)
		got := decode[struct {
			Choices []struct {
				Text     string `json:"text"`
				Logprobs struct {
					TextOffset    []int                `json:"text_offset"`
					TokenLogprobs []float64            `json:"token_logprobs"`
					Tokens        []string             `json:"tokens"`
					TopLogprobs   []map[string]float64 `json:"top_logprobs"`
				} `json:"logprobs"`
			} `json:"choices"`
		}](t, body)
		lp := got.Choices[0].Logprobs
		if strings.Join(lp.Tokens, "") != got.Choices[0].Text || len(lp.TokenLogprobs) != 3 || len(lp.TopLogprobs) != 3 || len(lp.TextOffset) != 3 {
			t.Fatalf("logprobs %s", body)
		}
		off := 0
		for i, tok := range lp.Tokens {
			if lp.TextOffset[i] != off || len(lp.TopLogprobs[i]) != 2 || lp.TopLogprobs[i][tok] != lp.TokenLogprobs[i] {
				t.Errorf("token %d: %s", i, body)
			}
			off += len(tok)
		}
	})
	t.Run("--max-logprobs is the limit", func(t *testing.T) {
		t.Parallel()
		resp, body := post(t, tools+"/v1/completions", `{"prompt":"hi","max_tokens":1,"logprobs":6}`)
		if resp.StatusCode != 400 || !strings.Contains(body, "greater than max allowed: 5") {
			t.Errorf("status %d: %s", resp.StatusCode, body)
		}
	})
	t.Run("json_object is valid JSON", func(t *testing.T) {
		t.Parallel()
		for _, n := range []string{"1", "2", "9"} {
			_, body := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":`+n+`,"response_format":{"type":"json_object"}}`)
			got := decode[chatResponse](t, body)
			if c := got.Choices[0].Message.Content; c == nil || !json.Valid([]byte(*c)) || got.Usage.CompletionTokens != int(n[0]-'0') {
				t.Errorf("max_tokens %s: %s", n, body)
			}
		}
	})
	t.Run("json_schema value matches the schema", func(t *testing.T) {
		t.Parallel()
		_, body := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":200,"response_format":{"type":"json_schema","json_schema":{"name":"person","schema":`+
			`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":18,"maximum":99},"tags":{"type":"array","items":{"type":"string"},"minItems":2},"kind":{"enum":["a","b"]}},"required":["name","age"]}}}}`)
		got := decode[chatResponse](t, body)
		var v struct {
			Name *string  `json:"name"`
			Age  *int     `json:"age"`
			Tags []string `json:"tags"`
			Kind string   `json:"kind"`
		}
		c := got.Choices[0].Message.Content
		if c == nil || json.Unmarshal([]byte(*c), &v) != nil || v.Name == nil || v.Age == nil || *v.Age < 18 || *v.Age > 99 || len(v.Tags) != 2 || (v.Kind != "a" && v.Kind != "b") {
			t.Fatalf("content does not match the schema: %s", body)
		}
		if got.Choices[0].FinishReason != "stop" || got.Usage.CompletionTokens >= 200 {
			t.Errorf("finish %q after %d tokens; want stop before max_tokens", got.Choices[0].FinishReason, got.Usage.CompletionTokens)
		}
	})
	t.Run("tool_choice none answers text", func(t *testing.T) {
		t.Parallel()
		_, body := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,`+weather+`,"tool_choice":"none"}`)
		got := decode[chatResponse](t, body)
		if len(got.Choices[0].Message.ToolCalls) != 0 || got.Choices[0].Message.Content == nil || *got.Choices[0].Message.Content == "" {
			t.Errorf("body %s", body)
		}
	})
	for _, tc := range []struct {
		name, url, choice, tool, finish string
	}{
		{"auto tool call with a parser", tools, `"auto"`, "get_time", "tool_calls"},
		{"required tool call with a parser", tools, `"required"`, "get_time", "tool_calls"},
		{"named tool call with a parser", tools, `{"type":"function","function":{"name":"get_weather"}}`, "get_weather", "stop"},
		{"v0.13 named tool call through guided decoding", v013, `{"type":"function","function":{"name":"get_weather"}}`, "get_weather", "stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, body := post(t, tc.url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"weather?"}],"max_tokens":100,`+weather+`,"tool_choice":`+tc.choice+`}`)
			got := decode[chatResponse](t, body)
			if len(got.Choices) != 1 || len(got.Choices[0].Message.ToolCalls) != 1 {
				t.Fatalf("no tool call: %s", body)
			}
			call := got.Choices[0].Message.ToolCalls[0]
			var args map[string]any
			if call.Function.Name != tc.tool || call.Type != "function" || !strings.HasPrefix(call.ID, "chatcmpl-tool-") || json.Unmarshal([]byte(call.Function.Arguments), &args) != nil {
				t.Errorf("call %+v", call)
			}
			if tc.tool == "get_weather" {
				if d, ok := args["days"].(float64); !ok || d < 1 || d > 7 || args["city"] == nil {
					t.Errorf("arguments %s do not match get_weather's parameters", call.Function.Arguments)
				}
			}
			if got.Choices[0].FinishReason != tc.finish {
				t.Errorf("finish_reason %q, want %q", got.Choices[0].FinishReason, tc.finish)
			}
		})
	}
	t.Run("streamed tool call", func(t *testing.T) {
		t.Parallel()
		_, body := post(t, tools+"/v1/chat/completions", `{"messages":[{"role":"user","content":"weather?"}],"stream":true,`+weather+`,"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`)
		var name, args string
		for _, ev := range sseEvents(body) {
			if ev == "[DONE]" {
				continue
			}
			c := decode[struct {
				Choices []struct {
					Delta struct {
						ToolCalls []struct {
							Function struct {
								Name      string `json:"name"`
								Arguments string `json:"arguments"`
							} `json:"function"`
						} `json:"tool_calls"`
					} `json:"delta"`
				} `json:"choices"`
			}](t, ev)
			for _, ch := range c.Choices {
				for _, tc := range ch.Delta.ToolCalls {
					name += tc.Function.Name
					args += tc.Function.Arguments
				}
			}
		}
		if name != "get_weather" || !json.Valid([]byte(args)) {
			t.Errorf("streamed call %q(%q):\n%s", name, args, body)
		}
	})
	t.Run("continuous_usage_stats puts usage on every chunk", func(t *testing.T) {
		t.Parallel()
		_, body := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`)
		var seen []int
		for _, ev := range sseEvents(body) {
			if ev == "[DONE]" {
				continue
			}
			c := decode[struct {
				Usage *usage `json:"usage"`
			}](t, ev)
			if c.Usage == nil {
				t.Fatalf("chunk without usage: %s", ev)
			}
			seen = append(seen, c.Usage.CompletionTokens)
		}
		if diff := cmp.Diff([]int{0, 1, 2, 3, 3}, seen); diff != "" {
			t.Errorf("completion_tokens per chunk (-want +got):\n%s", diff)
		}
	})
	t.Run("v0.13 answers streamed beam search whole", func(t *testing.T) {
		t.Parallel()
		resp, body := post(t, v013+"/v1/completions", `{"prompt":"hi","use_beam_search":true,"n":2,"max_tokens":2,"stream":true}`)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || strings.Count(body, `"index"`) != 2 {
			t.Errorf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	})
}
