package sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// This file is what the simulated model says: each choice's tokens as text pieces (filler
// words, a JSON value for response_format, or a tool call), and plausible log-probabilities
// for them. Everything is deterministic in the request number and the choice index.

// choicePlan is one choice's output, decided before the request is scheduled.
type choicePlan struct {
	index  int
	pieces []string // the text of each token; nil: filler words for as many as are generated
	offset int      // filler: the first word's position, so that choices differ
	tokens int      // tokens to generate
	finish string   // "length", or "stop" when the output ends before max_tokens
	tool   *toolCall
}

// toolCall is a simulated call of one of the request's tools.
type toolCall struct {
	id, name string
	kind     string // "auto", "required" or "named": what vLLM's answer looks like
}

// piece returns the text of token i.
func (p *choicePlan) piece(i int) string {
	if p.pieces != nil {
		if i < len(p.pieces) {
			return p.pieces[i]
		}
		return ""
	}
	return " " + fillerWords[(p.offset+i)%len(fillerWords)]
}

// text returns tokens from..to-1 joined.
func (p *choicePlan) text(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(p.piece(i))
	}
	return b.String()
}

// planChoices decides what each choice says: up to maxOut tokens of filler, of a JSON
// value (response_format) or of a tool call. An apiError is a response_format the
// simulator cannot honour, refused as vLLM's structured-output backend refuses it.
func planChoices(r *apiRequest, d apiDialect, o serverOptions, nreq, maxOut int) ([]choicePlan, *apiError) {
	plans := make([]choicePlan, r.n)
	var schema map[string]any
	if rf := r.ResponseFormat; rf != nil {
		switch rf.Type {
		case "json_schema":
			if err := json.Unmarshal(rf.JSONSchema.Schema, &schema); err != nil || schema == nil {
				return nil, validation{msg: "Invalid JSON schema: the schema must be a JSON object.", param: "response_format"}.serving(d)
			}
			if kw := unsupportedSchema(schema); kw != "" {
				return nil, validation{msg: fmt.Sprintf("The provided JSON schema contains features not supported by xgrammar. (unsupported keyword %q)", kw), param: "response_format"}.serving(d)
			}
		case "json_object", "text", "":
		default:
			return nil, validation{msg: fmt.Sprintf("Unsupported response_format type %q: want text, json_object or json_schema.", rf.Type), param: "response_format"}.serving(d)
		}
	}
	for i := range plans {
		p := &plans[i]
		p.index, p.tokens, p.finish, p.offset = i, maxOut, "length", 7*i
		seed := uint64(nreq)<<8 | uint64(i)
		switch {
		case r.chat && r.toolChoice != "none" && len(r.Tools) > 0 && (o.toolCallParser != "" || !d.toolParserRequired):
			t := r.Tools[0]
			if r.toolChoice == "named" {
				for _, c := range r.Tools {
					if c.Function.Name == r.toolName {
						t = c
					}
				}
			}
			var params map[string]any
			_ = json.Unmarshal(t.Function.Parameters, &params)
			args, _ := json.Marshal(orderedValue(valueFor(params, seed)))
			// The model writes the call's arguments (plus one token for the name).
			pieces := append([]string{""}, tokenize(string(args))...)
			if len(pieces) > maxOut {
				// Cut off before the call is whole: the parser finds no call, and the text
				// stays content, as vLLM answers.
				p.pieces = tokenize(fmt.Sprintf(`{"name": %q, "arguments": %s}`, t.Function.Name, args))[:maxOut]
				break
			}
			p.pieces, p.tokens, p.finish = pieces, len(pieces), "stop"
			p.tool = &toolCall{id: fmt.Sprintf("chatcmpl-tool-%016x%016x", unitBits(seed^0xabc), unitBits(seed^0xdef)),
				name: t.Function.Name, kind: r.toolChoice}
		case r.ResponseFormat != nil && r.ResponseFormat.Type == "json_object":
			p.pieces = jsonObjectPieces(maxOut, p.offset)
			p.finish = "stop"
		case schema != nil:
			text, _ := json.Marshal(orderedValue(valueFor(schema, seed)))
			pieces := tokenize(string(text))
			if len(pieces) <= maxOut {
				p.pieces, p.tokens, p.finish = pieces, len(pieces), "stop"
			} else {
				p.pieces = pieces[:maxOut] // cut off at max_tokens, as vLLM's is
			}
		}
	}
	return plans, nil
}

// jsonObjectPieces is a JSON object of exactly n tokens: {"answer": "<words>"}.
func jsonObjectPieces(n, offset int) []string {
	if n == 1 {
		return []string{"{}"}
	}
	pieces := []string{`{"answer": "`}
	for i := 0; i < n-2; i++ {
		w := fillerWords[(offset+i)%len(fillerWords)]
		if i > 0 {
			w = " " + w
		}
		pieces = append(pieces, w)
	}
	return append(pieces, `"}`)
}

// tokenize splits a text into the simulator's tokens: a word with its leading space, or a
// run of punctuation.
func tokenize(s string) []string {
	var out []string
	start := 0
	class := func(r rune) int {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
			return 1
		case r == ' ':
			return 0
		}
		return 2
	}
	prev := -1
	for i, r := range s {
		c := class(r)
		// A space starts a token; a word continues after its space.
		split := i > start && (c == 0 || c != prev && !(prev == 0 && c == 1))
		if split {
			out = append(out, s[start:i])
			start = i
		}
		prev = c
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// schemaKeywords are the JSON Schema keywords the simulator honours.
var schemaKeywords = map[string]bool{"type": true, "properties": true, "required": true, "items": true, "enum": true,
	"const": true, "title": true, "description": true, "additionalProperties": true, "minimum": true, "maximum": true,
	"minItems": true, "maxItems": true, "default": true, "$schema": true}

// unsupportedSchema returns the first keyword of a schema the simulator cannot honour.
func unsupportedSchema(s map[string]any) string {
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if !schemaKeywords[k] {
			return k
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			if sub, ok := props[k].(map[string]any); ok {
				if kw := unsupportedSchema(sub); kw != "" {
					return kw
				}
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		return unsupportedSchema(items)
	}
	return ""
}

// kv is one property of a generated object, kept in the schema's order.
type kv struct {
	k string
	v any
}

// orderedValue turns a generated value into one that marshals with its keys in order.
func orderedValue(v any) any {
	switch x := v.(type) {
	case []kv:
		m := make(orderedMap, len(x))
		for i, p := range x {
			m[i].k, m[i].v = p.k, orderedValue(p.v)
		}
		return m
	case []any:
		for i := range x {
			x[i] = orderedValue(x[i])
		}
	}
	return v
}

// valueFor generates a value that matches a (supported) JSON schema: required properties
// and all listed ones, the first enum value or the const, numbers within bounds, one or
// minItems array items, strings of two filler words.
func valueFor(s map[string]any, seed uint64) any {
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[int(unitHash(seed)*float64(len(e)))]
	}
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	if typ == "" {
		if _, ok := s["properties"]; ok {
			typ = "object"
		} else {
			typ = "string"
		}
	}
	u := unitHash(seed)
	switch typ {
	case "object":
		props, _ := s["properties"].(map[string]any)
		var obj []kv
		for i, k := range schemaOrder(s) {
			sub, _ := props[k].(map[string]any)
			obj = append(obj, kv{k, valueFor(sub, seed*31+uint64(i)+1)})
		}
		return obj
	case "array":
		n := 1
		if m, ok := s["minItems"].(float64); ok && int(m) > n {
			n = int(m)
		}
		if m, ok := s["maxItems"].(float64); ok && int(m) < n {
			n = int(m)
		}
		items, _ := s["items"].(map[string]any)
		out := make([]any, n)
		for i := range out {
			out[i] = valueFor(items, seed*17+uint64(i)+1)
		}
		return out
	case "integer", "number":
		lo, hi := 0.0, 100.0
		if m, ok := s["minimum"].(float64); ok {
			lo = m
			if _, ok := s["maximum"]; !ok {
				hi = lo + 100
			}
		}
		if m, ok := s["maximum"].(float64); ok {
			hi = m
			if _, ok := s["minimum"]; !ok {
				lo = hi - 100
			}
		}
		v := lo + u*(hi-lo)
		if typ == "integer" {
			return int(math.Round(math.Min(math.Max(math.Ceil(lo), math.Round(v)), math.Floor(hi))))
		}
		return math.Round(v*100) / 100
	case "boolean":
		return u < 0.5
	case "null":
		return nil
	}
	i := int(u * float64(len(fillerWords)))
	return fillerWords[i%len(fillerWords)] + " " + fillerWords[(i+1)%len(fillerWords)]
}

// schemaOrder is the order of an object's generated properties: those listed in
// "properties" as the schema writes them (JSON order is lost by decoding, so required
// ones first, then the rest by name).
func schemaOrder(s map[string]any) []string {
	props, _ := s["properties"].(map[string]any)
	seen := map[string]bool{}
	var out []string
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if k, ok := r.(string); ok && !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if !seen[k] {
			out = append(out, k)
		}
	}
	return out
}

// unitBits maps n to 64 pseudo-random bits.
func unitBits(n uint64) uint64 { return uint64(unitHash(n) * (1 << 53)) }

// tokenLogprob is a token's log-probability and its top alternatives.
type tokenLogprob struct {
	token string
	lp    float64
	top   []altLogprob // the sampled token first (it is the most likely), then the others
}

type altLogprob struct {
	token string
	lp    float64
}

// logprobFor makes up the log-probabilities of token i of a choice: the sampled token is
// the most likely one, with probability between 0.2 and 0.8, and k-1 alternatives follow
// it, each at least e times less likely than the one before, so the probabilities shown
// never add up to more than 1.
func logprobFor(piece string, nreq, choice, i, k int) tokenLogprob {
	seed := uint64(nreq)<<32 ^ uint64(choice)<<24 ^ uint64(i)
	lp0 := -(0.22 + 1.4*unitHash(seed))
	t := tokenLogprob{token: piece, lp: round6(lp0)}
	if k <= 0 {
		return t
	}
	t.top = append(t.top, altLogprob{piece, t.lp})
	lp := lp0 - 1
	for j := 1; j < k; j++ {
		lp -= 1 + unitHash(seed^uint64(j)*0x9e37)
		w := fillerWords[(int(seed%97)+3*j)%len(fillerWords)]
		alt := " " + w
		if alt == piece || strings.TrimSpace(piece) == w {
			alt = w // the same word without its space is another token
		}
		if j >= len(fillerWords) {
			alt = "<|tok_" + strconv.Itoa(j) + "|>"
		}
		t.top = append(t.top, altLogprob{alt, round6(lp)})
	}
	return t
}

func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }

func tokenBytes(s string) []int {
	b := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		b[i] = int(s[i])
	}
	return b
}

// chatLogprobs is chat's logprobs object for tokens from..to-1 of a choice.
func (g *generation) chatLogprobs(p *choicePlan, from, to int) any {
	content := make([]any, 0, to-from)
	for i := from; i < to; i++ {
		t := logprobFor(p.piece(i), g.nreq, p.index, i, g.req.logprobs)
		top := make([]any, 0, len(t.top))
		for _, a := range t.top {
			top = append(top, orderedMap{{"token", a.token}, {"logprob", a.lp}, {"bytes", tokenBytes(a.token)}})
		}
		content = append(content, orderedMap{{"token", t.token}, {"logprob", t.lp}, {"bytes", tokenBytes(t.token)}, {"top_logprobs", top}})
	}
	return orderedMap{{"content", content}}
}

// completionLogprobs is the completions API's logprobs object for tokens from..to-1 of a
// choice, whose text so far is offset characters long.
func (g *generation) completionLogprobs(p *choicePlan, from, to, offset int) any {
	var offsets []int
	var lps []float64
	var toks []string
	var tops []any
	for i := from; i < to; i++ {
		t := logprobFor(p.piece(i), g.nreq, p.index, i, max(g.req.logprobs, 1))
		offsets = append(offsets, offset)
		offset += len(t.token)
		lps = append(lps, t.lp)
		toks = append(toks, t.token)
		top := orderedMap{}
		for _, a := range t.top {
			top = append(top, struct {
				k string
				v any
			}{a.token, a.lp})
		}
		tops = append(tops, top)
	}
	return orderedMap{{"text_offset", offsets}, {"token_logprobs", lps}, {"tokens", toks}, {"top_logprobs", tops}}
}
