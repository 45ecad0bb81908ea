package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/frontier-llm/frontier/vllm"
)

// This file is the simulated server's reading of an OpenAI request as vLLM reads it: the
// request models' validators, the serving layer's checks and the sampling parameters'
// checks, in vLLM's order, each refusing with vLLM's own status, error type, message and
// `param`. Two behaviours are modelled: the v0.13 line (read at 9187de9fac94) and the
// current line (main of 2026-05-19, 9aaf83ef502f, about v0.22), which the lines from v0.14
// on follow (see docs/sim.md, "The simulated vLLM's API").

// apiDialect is what differs between the emulated releases' OpenAI servers.
type apiDialect struct {
	// params: errors carry `param` (VLLMValidationError, vLLM #30134 and #31870), messages
	// end in "(parameter=..., value=...)", and the context-length refusal comes from the
	// renderer ("you requested K output tokens and your prompt contains N input tokens").
	params bool
	// toolParserRequired: tool_choice "required" or a named tool needs --tool-call-parser
	// (v0.13 served them through guided decoding without one).
	toolParserRequired bool
	// beamStreamRefused: completions refuse stream with use_beam_search (v0.13 answered
	// without streaming).
	beamStreamRefused bool
}

func dialectOf(line string) apiDialect {
	if line == "0.13" {
		return apiDialect{}
	}
	return apiDialect{params: true, toolParserRequired: true, beamStreamRefused: true}
}

// serverOptions are the `vllm serve` flags that shape the OpenAI server's answers.
type serverOptions struct {
	maxLogprobs       int    // --max-logprobs (20)
	autoToolChoice    bool   // --enable-auto-tool-choice
	toolCallParser    string // --tool-call-parser
	forceIncludeUsage bool   // --enable-force-include-usage
}

// apiOptionsOf reads the server flags from the command line's unmodelled options, with
// the emulated version's argparse, so they are typed as vLLM types them.
func apiOptionsOf(a ServeArgs) serverOptions {
	o := serverOptions{maxLogprobs: 20}
	v, err := vllm.Lookup(a.VLLMVersion)
	if err != nil {
		return o
	}
	if f, ok := v.Flag("max_logprobs"); ok {
		if d, ok := f.Default.(int64); ok {
			o.maxLogprobs = int(d)
		}
	}
	parsed, err := v.ParseArgs(a.Other)
	if err != nil {
		return o
	}
	if n, ok := parsed.Values["max_logprobs"].(int64); ok {
		o.maxLogprobs = int(n)
	}
	o.autoToolChoice, _ = parsed.Values["enable_auto_tool_choice"].(bool)
	o.toolCallParser, _ = parsed.Values["tool_call_parser"].(string)
	o.forceIncludeUsage, _ = parsed.Values["enable_force_include_usage"].(bool)
	return o
}

// apiError is one of vLLM's error responses.
type apiError struct {
	status int
	typ    string
	msg    string
	param  string // "" is null
}

func (e *apiError) Error() string { return e.msg }

// write sends the error as vLLM's ErrorResponse: {"error": {message, type, param, code}}.
func (e *apiError) write(w http.ResponseWriter) {
	var param any
	if e.param != "" {
		param = e.param
	}
	writeJSON(w, e.status, map[string]any{"error": orderedMap{
		{"message", e.msg}, {"type", e.typ}, {"param", param}, {"code", e.status}}})
}

// body is the event a stream sends for an error after it has started.
func (e *apiError) body() any {
	var param any
	if e.param != "" {
		param = e.param
	}
	return map[string]any{"error": orderedMap{{"message", e.msg}, {"type", e.typ}, {"param", param}, {"code", e.status}}}
}

// orderedMap is a JSON object that keeps its keys in the order given, as pydantic does.
type orderedMap []struct {
	k string
	v any
}

// MarshalJSON writes the object with its keys in order.
func (m orderedMap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv.k)
		b.Write(k)
		b.WriteByte(':')
		var v bytes.Buffer
		enc := json.NewEncoder(&v)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(kv.v); err != nil {
			return nil, err
		}
		b.Write(bytes.TrimRight(v.Bytes(), "\n"))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// validation is a failed check of vLLM's: a VLLMValidationError (param set) or a plain
// ValueError (no param).
type validation struct {
	msg   string
	param string
	value any // shown in the message as "value=..." when not nil
}

// text is str(exc): the message, then "(parameter=..., value=...)" for a
// VLLMValidationError of a version that has them.
func (v validation) text(d apiDialect) string {
	if !d.params || v.param == "" {
		return v.msg
	}
	extras := []string{"parameter=" + v.param}
	if v.value != nil {
		extras = append(extras, "value="+pyRepr(v.value, false))
	}
	return v.msg + " (" + strings.Join(extras, ", ") + ")"
}

// serving is the error of a check in the serving layer (create_error_response): type
// BadRequestError, message str(exc), param the VLLMValidationError's parameter.
func (v validation) serving(d apiDialect) *apiError {
	e := &apiError{status: http.StatusBadRequest, typ: "BadRequestError", msg: v.text(d)}
	if d.params {
		e.param = v.param
	}
	return e
}

// model is the error of a request model's validator (pydantic, then FastAPI's
// RequestValidationError handler): type "Bad Request", the message pydantic's error list
// as Python prints it, param the VLLMValidationError's parameter.
func (v validation) model(d apiDialect, body []byte) *apiError {
	cls := "ValueError"
	if d.params && v.param != "" {
		cls = "VLLMValidationError"
	}
	text := v.text(d)
	msg := "[{'type': 'value_error', 'loc': ('body',), 'msg': " + pyStr("Value error, "+text) +
		", 'input': " + pyJSON(body) + ", 'ctx': {'error': " + cls + "(" + pyStr(v.msg) + ")}}]"
	e := &apiError{status: http.StatusBadRequest, typ: "Bad Request", msg: msg}
	if d.params {
		e.param = v.param
	}
	return e
}

// typeError is pydantic's refusal of a field of the wrong type.
func typeError(field, want string, body []byte, raw json.RawMessage) *apiError {
	msg := "[{'type': '" + want + "_type', 'loc': ('body', " + pyStr(field) + "), 'msg': " +
		pyStr("Input should be a valid "+want) + ", 'input': " + pyJSON(raw) + "}]"
	return &apiError{status: http.StatusBadRequest, typ: "Bad Request", msg: msg}
}

// apiRequest is a completions or chat completions request as the server reads it.
type apiRequest struct {
	chat bool
	body []byte
	has  map[string]json.RawMessage

	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	N                   *int            `json:"n"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	MinP                *float64        `json:"min_p"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	RepetitionPenalty   *float64        `json:"repetition_penalty"`
	UseBeamSearch       bool            `json:"use_beam_search"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	ResponseFormat      *responseFormat `json:"response_format"`
	Tools               []toolParam     `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	// Logprobs is chat's `logprobs: true` or completions' integer `logprobs`.
	Logprobs    json.RawMessage `json:"logprobs"`
	TopLogprobs *int            `json:"top_logprobs"`

	// Resolved by check.
	n           int  // choices
	logprobs    int  // top alternatives per token
	wantLogprob bool // logprobs are returned
	toolChoice  string
	toolName    string // the named tool, for a named tool_choice
}

type streamOptions struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats bool  `json:"continuous_usage_stats"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

type toolParam struct {
	Type     string `json:"type"`
	Function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// decodeRequest reads a request body. A body that is not a JSON object, or a field of the
// wrong type, is pydantic's 400.
func decodeRequest(body []byte, chat bool) (*apiRequest, *apiError) {
	r := &apiRequest{chat: chat, body: body}
	if err := json.Unmarshal(body, &r.has); err != nil {
		return nil, &apiError{status: http.StatusBadRequest, typ: "Bad Request",
			msg: "[{'type': 'json_invalid', 'loc': ('body', 0), 'msg': 'JSON decode error', 'input': {}, 'ctx': {'error': " + pyStr(err.Error()) + "}}]"}
	}
	if err := json.Unmarshal(body, r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			want := te.Type.Kind().String()
			switch want {
			case "float64":
				want = "number"
			case "int", "int64":
				want = "integer"
			case "bool":
				want = "boolean"
			case "slice":
				want = "list"
			case "struct", "map", "ptr":
				want = "dictionary"
			}
			field := te.Field
			if i := strings.IndexByte(field, '.'); i >= 0 {
				field = field[:i]
			}
			return nil, typeError(field, want, body, r.has[field])
		}
		return nil, &apiError{status: http.StatusBadRequest, typ: "Bad Request", msg: pyStr(err.Error())}
	}
	return r, nil
}

// checkModel runs the request model's validators (pydantic, before the handler sees the
// request), in vLLM's order.
func (r *apiRequest) checkModel(d apiDialect) *apiError {
	fail := func(v validation) *apiError { return v.model(d, r.body) }
	// validate_response_format
	if rf := r.ResponseFormat; rf != nil && rf.Type == "json_schema" && (rf.JSONSchema == nil || rf.JSONSchema.Schema == nil) {
		return fail(validation{msg: "When response_format type is 'json_schema', the 'json_schema' field must be provided.", param: "response_format"})
	}
	streamOpts := r.StreamOptions != nil && len(r.has["stream_options"]) > 2 // a non-empty object
	if !r.chat {
		// check_logprobs, then validate_stream_options
		if n, ok := r.completionLogprobs(); ok && n < 0 {
			return fail(validation{msg: "`logprobs` must be a positive value.", param: "logprobs", value: n})
		}
		if streamOpts && !r.Stream {
			return fail(validation{msg: "Stream options can only be defined when `stream=True`.", param: "stream_options"})
		}
		return nil
	}
	// validate_stream_options, check_logprobs
	if streamOpts && !r.Stream {
		return fail(validation{msg: "Stream options can only be defined when `stream=True`.", param: "stream_options"})
	}
	if k := r.TopLogprobs; k != nil {
		if *k < 0 && *k != -1 {
			return fail(validation{msg: "`top_logprobs` must be a positive value or -1.", param: "top_logprobs", value: *k})
		}
		if (*k == -1 || *k > 0) && !r.chatLogprobs() {
			return fail(validation{msg: "when using `top_logprobs`, `logprobs` must be set to true.", param: "top_logprobs"})
		}
	}
	// check_tool_usage: these raise plain ValueErrors (no param) in both lines.
	plain := func(msg string) *apiError { return validation{msg: msg}.model(d, r.body) }
	if raw, ok := r.has["tools"]; ok && string(raw) == "[]" {
		return plain("`tools` must not be an empty array. Either provide at least one tool or omit the field entirely.")
	}
	choice := strings.TrimSpace(string(r.ToolChoice))
	if choice == "" && len(r.Tools) > 0 {
		choice = `"auto"`
	}
	r.toolChoice = "none"
	if choice == "" || choice == "null" || choice == `"none"` {
		return nil
	}
	if r.Tools == nil {
		return plain("When using `tool_choice`, `tools` must be set.")
	}
	var s string
	if json.Unmarshal([]byte(choice), &s) == nil {
		if s != "auto" && s != "required" {
			return plain(fmt.Sprintf("Invalid value for `tool_choice`: %s! Only named tools, \"none\", \"auto\" or \"required\" are supported.", s))
		}
		r.toolChoice = s
		return nil
	}
	usage := "Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`"
	var named map[string]json.RawMessage
	if err := json.Unmarshal([]byte(choice), &named); err != nil {
		return plain(fmt.Sprintf("Invalid value for `tool_choice`: %s! Only named tools, \"none\", \"auto\" or \"required\" are supported.", pyJSON([]byte(choice))))
	}
	var fn map[string]json.RawMessage
	if json.Unmarshal(named["function"], &fn) != nil || fn == nil {
		return plain(fmt.Sprintf("Invalid value for `function`: `%s` in `tool_choice`! %s", pyJSON(named["function"]), usage))
	}
	rawName, ok := fn["name"]
	if !ok {
		return plain("Expected field `name` in `function` in `tool_choice`! " + usage)
	}
	var name string
	if json.Unmarshal(rawName, &name) != nil || name == "" {
		return plain(fmt.Sprintf("Invalid `name` in `function`: `%s` in `tool_choice`! %s", pyJSON(rawName), usage))
	}
	for _, t := range r.Tools {
		if t.Function.Name == name {
			r.toolChoice, r.toolName = "named", name
			return nil
		}
	}
	return plain("The tool specified in `tool_choice` does not match any of the specified `tools`")
}

// completionLogprobs is completions' integer logprobs, if given.
func (r *apiRequest) completionLogprobs() (int, bool) {
	raw := strings.TrimSpace(string(r.Logprobs))
	if raw == "" || raw == "null" {
		return 0, false
	}
	n, err := strconv.Atoi(raw)
	return n, err == nil
}

// chatLogprobs is chat's logprobs flag.
func (r *apiRequest) chatLogprobs() bool { return strings.TrimSpace(string(r.Logprobs)) == "true" }

// checkTools is the chat renderer's check of tool_choice against the server's flags.
func (r *apiRequest) checkTools(d apiDialect, o serverOptions) *apiError {
	if !r.chat || r.toolChoice == "none" {
		return nil
	}
	if o.toolCallParser != "" {
		if r.toolChoice == "auto" && !o.autoToolChoice {
			return validation{msg: `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`}.serving(d)
		}
		return nil
	}
	switch {
	case r.toolChoice == "auto":
		return validation{msg: `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`}.serving(d)
	case d.toolParserRequired && r.toolChoice == "required":
		return validation{msg: `tool_choice="required" requires --tool-call-parser to be set`}.serving(d)
	case d.toolParserRequired:
		// The f-string shows the pydantic model, as str() prints it.
		return validation{msg: fmt.Sprintf(`tool_choice="function=ChatCompletionNamedFunction(name=%s) type='function'" requires --tool-call-parser to be set`, pyStr(r.toolName))}.serving(d)
	}
	return nil
}

// checkSampling builds vLLM's SamplingParams from the request and runs its checks
// (SamplingParams._verify_args), then the input processor's max-logprobs check. maxTokens
// is the output budget the server resolved.
func (r *apiRequest) checkSampling(d apiDialect, o serverOptions, maxTokens, vocab int) *apiError {
	r.n = 1
	if r.N != nil {
		r.n = *r.N
	}
	temp := 1.0
	if r.Temperature != nil {
		temp = *r.Temperature
	}
	topP := 1.0
	if r.TopP != nil {
		topP = *r.TopP
	}
	f := func(p *float64, def float64) float64 {
		if p == nil {
			return def
		}
		return *p
	}
	presence, frequency, repetition, minP := f(r.PresencePenalty, 0), f(r.FrequencyPenalty, 0), f(r.RepetitionPenalty, 1), f(r.MinP, 0)
	topK := 0
	if r.TopK != nil {
		topK = *r.TopK
	}
	bad := func(v validation) *apiError { return v.serving(d) }
	switch {
	case r.n < 1:
		return bad(validation{msg: fmt.Sprintf("n must be at least 1, got %d.", r.n)})
	case d.params && r.n > 16384:
		return bad(validation{msg: fmt.Sprintf("n must be at most 16384, got %d. To increase this limit, set the VLLM_MAX_N_SEQUENCES environment variable.", r.n)})
	case presence < -2 || presence > 2:
		return bad(validation{msg: "presence_penalty must be in [-2, 2], got " + pyFloat(presence) + "."})
	case frequency < -2 || frequency > 2:
		return bad(validation{msg: "frequency_penalty must be in [-2, 2], got " + pyFloat(frequency) + "."})
	case repetition <= 0:
		return bad(validation{msg: "repetition_penalty must be greater than zero, got " + pyFloat(repetition) + "."})
	case temp < 0:
		return bad(validation{msg: "temperature must be non-negative, got " + pyFloat(temp) + ".", param: "temperature", value: temp})
	case !(topP > 0 && topP <= 1):
		return bad(validation{msg: "top_p must be in (0, 1], got " + pyFloat(topP) + ".", param: "top_p", value: topP})
	case topK < -1:
		return bad(validation{msg: fmt.Sprintf("top_k must be 0 (disable), or at least 1, got %d.", topK)})
	case minP < 0 || minP > 1:
		return bad(validation{msg: "min_p must be in [0, 1], got " + pyFloat(minP) + "."})
	case maxTokens < 1:
		return bad(validation{msg: fmt.Sprintf("max_tokens must be at least 1, got %d.", maxTokens), param: "max_tokens", value: maxTokens})
	case r.MinTokens < 0:
		return bad(validation{msg: fmt.Sprintf("min_tokens must be greater than or equal to 0, got %d.", r.MinTokens)})
	case r.MinTokens > maxTokens:
		return bad(validation{msg: fmt.Sprintf("min_tokens must be less than or equal to max_tokens=%d, got %d.", maxTokens, r.MinTokens)})
	}
	// Logprobs: chat asks for top_logprobs alternatives when logprobs is true;
	// completions for `logprobs` of them; -1 is the whole vocabulary.
	r.logprobs = 0
	if r.chat {
		if r.chatLogprobs() {
			r.wantLogprob = true
			if r.TopLogprobs != nil {
				r.logprobs = *r.TopLogprobs
			}
		}
	} else if n, ok := r.completionLogprobs(); ok {
		if n < -1 {
			return bad(validation{msg: fmt.Sprintf("logprobs must be non-negative or -1, got %d.", n), param: "logprobs", value: n})
		}
		r.wantLogprob, r.logprobs = true, n
	}
	if r.logprobs == -1 {
		r.logprobs = vocab
	}
	if temp < 1e-5 && r.n > 1 && !r.UseBeamSearch {
		return bad(validation{msg: fmt.Sprintf("n must be 1 when using greedy sampling, got %d.", r.n)})
	}
	if r.wantLogprob {
		max := o.maxLogprobs
		if max == -1 {
			max = vocab
		}
		if r.logprobs > max {
			return bad(validation{msg: fmt.Sprintf("Requested sample logprobs of %d, which is greater than max allowed: %d", r.logprobs, max), param: "logprobs", value: r.logprobs})
		}
	}
	return nil
}

// contextError is vLLM's refusal of a request that does not fit in max_model_len: in
// tokens of prompt and out requested (out 0 when the request set none), exact tells a
// count of token ids from one of a tokenised text (which the renderer tokenises only up to
// one token past the limit).
func contextError(d apiDialect, maxLen, in, out int, outParam string, exact bool) *apiError {
	if !d.params {
		if in >= maxLen {
			return validation{msg: contextLengthError(maxLen, in, 0)}.serving(d)
		}
		return validation{msg: contextLengthError(maxLen, in, out)}.serving(d)
	}
	if out > maxLen {
		return validation{msg: fmt.Sprintf("%s=%d cannot be greater than max_model_len=max_total_tokens=%d. Please request fewer output tokens.", outParam, out, maxLen),
			param: outParam, value: out}.serving(d)
	}
	maxIn := maxLen - out
	if !exact && in > maxIn+1 {
		in = maxIn + 1
	}
	q := ""
	if in == maxIn+1 {
		q = "at least "
	}
	return validation{msg: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains %s%d input tokens, for a total of %s%d tokens. Please reduce the length of the input prompt or the number of requested output tokens.",
		maxLen, out, q, in, q, in+out), param: "input_tokens", value: in}.serving(d)
}

// fits reports whether a prompt of in tokens and out requested output tokens passes the
// emulated version's length check.
func fits(d apiDialect, maxLen, in, out int, outGiven bool) bool {
	if !d.params {
		if in >= maxLen {
			return false
		}
		return !outGiven || in+out <= maxLen
	}
	if !outGiven {
		out = 0
	}
	return out <= maxLen && in <= maxLen-out
}

// pyFloat is Python's repr of a float.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if strings.ContainsAny(s, "e") {
		mant, exp, _ := strings.Cut(s, "e")
		if !strings.HasPrefix(exp, "-") && !strings.HasPrefix(exp, "+") {
			exp = "+" + exp
		}
		if len(strings.TrimLeft(exp, "+-")) < 2 {
			exp = exp[:1] + "0" + exp[1:]
		}
		return mant + "e" + exp
	}
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// pyStr is Python's repr of a str.
func pyStr(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// pyRepr prints a Go value as Python prints the same JSON value.
func pyRepr(v any, _ bool) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return pyStr(x)
	case float64:
		return pyFloat(x)
	case int:
		return strconv.Itoa(x)
	}
	return fmt.Sprint(v)
}

// pyJSON prints a JSON document as Python prints it once json.loads has read it: dicts
// in their keys' order, True, False, None, ints and floats as Python writes them.
func pyJSON(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	if err := pyValue(dec, &b); err != nil {
		return pyStr(string(raw))
	}
	return b.String()
}

func pyValue(dec *json.Decoder, b *strings.Builder) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	switch x := t.(type) {
	case json.Delim:
		closing := "]"
		if x == '{' {
			closing = "}"
		}
		b.WriteString(string(x))
		first := true
		for dec.More() {
			if !first {
				b.WriteString(", ")
			}
			first = false
			if x == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				b.WriteString(pyStr(fmt.Sprint(k)))
				b.WriteString(": ")
			}
			if err := pyValue(dec, b); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		b.WriteString(closing)
	case json.Number:
		if n, err := x.Int64(); err == nil && !strings.ContainsAny(x.String(), ".eE") {
			b.WriteString(strconv.FormatInt(n, 10))
		} else if f, err := x.Float64(); err == nil {
			b.WriteString(pyFloat(f))
		} else {
			b.WriteString(x.String())
		}
	default:
		b.WriteString(pyRepr(x, false))
	}
	return nil
}
