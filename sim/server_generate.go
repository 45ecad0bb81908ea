package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// handleGenerate serves POST /v1/completions and /v1/chat/completions: it reads the
// request as the emulated vLLM does (server_api.go), refusing what that vLLM refuses, then
// schedules one engine sequence per choice and answers, whole or streamed, with what the
// simulated model says (server_output.go).
func (sv *server) handleGenerate(w http.ResponseWriter, r *http.Request, chat bool) {
	nreq := int(sv.received.Add(1))
	if st := sv.o.Args.Faults.status(nreq); st != 0 {
		writeError(w, st, fmt.Sprintf("simulated error (--fault-error-burst): request %d", nreq))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	d, o := sv.dialect, sv.api
	req, aerr := decodeRequest(body, chat)
	if aerr == nil {
		aerr = req.checkModel(d)
	}
	if aerr == nil && req.Model != "" && req.Model != sv.o.Args.ServedModelName {
		aerr = &apiError{status: http.StatusNotFound, typ: "NotFoundError", msg: fmt.Sprintf("The model `%s` does not exist.", req.Model)}
		if d.params {
			aerr.param = "model"
		}
	}
	stream := req != nil && req.Stream
	if aerr == nil && !chat && req.UseBeamSearch && req.Stream {
		if d.beamStreamRefused {
			aerr = validation{msg: "Streaming is not currently supported with beam search"}.serving(d)
		} else {
			stream = false // v0.13 answers beam search whole
		}
	}
	if aerr == nil {
		aerr = req.checkTools(d, o)
	}
	var units []uint64
	exact := false
	if aerr == nil {
		if chat {
			units, err = chatUnits(req.Messages)
		} else {
			units, err = promptUnits(req.Prompt)
			var ids []int64
			exact = err == nil && json.Unmarshal(req.Prompt, &ids) == nil
		}
		if err != nil {
			aerr = validation{msg: err.Error(), param: "messages"}.serving(d)
			if !chat {
				aerr = validation{msg: err.Error(), param: "prompt"}.serving(d)
			}
		}
	}
	in, maxLen := len(units), sv.eng.cfg.MaxModelLen
	out, outGiven, outParam := 16, !chat, "max_tokens" // the completions API's default max_tokens
	if aerr == nil {
		switch {
		case req.MaxCompletionTokens != nil && chat:
			out, outGiven, outParam = *req.MaxCompletionTokens, true, "max_completion_tokens"
		case req.MaxTokens != nil:
			out, outGiven = *req.MaxTokens, true
		}
		if !fits(d, maxLen, in, out, outGiven) {
			shown := out
			if !outGiven {
				shown = 0
			}
			aerr = contextError(d, maxLen, in, shown, outParam, exact)
		}
		if !outGiven {
			out = maxLen - in
		}
	}
	if aerr == nil {
		aerr = req.checkSampling(d, o, out, sv.o.Arch.Vocab)
	}
	var plans []choicePlan
	if aerr == nil {
		plans, aerr = planChoices(req, d, o, nreq, out)
	}
	var kv *kvRequest
	if aerr == nil {
		kv, aerr = sv.kvTransferOf(r.Context(), req, units)
	}
	if aerr != nil {
		aerr.write(w)
		return
	}

	total := 0
	for _, p := range plans {
		total += p.tokens + 1
	}
	ch := make(chan tokenMsg, total)
	lrs := make([]*liveReq, len(plans))
	var hashes []uint64
	if sv.eng.cfg.EnablePrefixCaching {
		hashes = blockHashes(units, sv.eng.cfg.BlockSize)
	}
	for i, p := range plans {
		id := sv.nextID.Add(1)
		h := hashes
		if h != nil && p.pieces == nil && p.tokens <= maxHashedOutput {
			// The answer's blocks are cached too, with the content of its filler words: a
			// conversation's next turn, whose prompt holds this reply, finds them.
			h = blockHashes(wordUnits(units[:len(units):len(units)], p.text(0, p.tokens)), sv.eng.cfg.BlockSize)
		}
		lrs[i] = &liveReq{s: seq{id: int(id), prompt: in, maxOut: p.tokens, hashes: h, remote: kv.remoteTokens()}, out: ch, choice: i}
		sv.submit(lrs[i])
	}
	g := &generation{sv: sv, w: w, chat: chat, req: req, plans: plans, nreq: nreq, in: in, created: time.Now().Unix(), kv: kv,
		arrival: time.Now(), last: make([]time.Time, len(plans))}
	base := fmt.Sprintf("%032x", uint64(lrs[0].s.id)*0x9e3779b97f4a7c15)
	if chat {
		g.idStr = "chatcmpl-" + base
	} else {
		g.idStr = "cmpl-" + base
	}
	if stream {
		if so := req.StreamOptions; so != nil {
			g.usage = so.IncludeUsage == nil || *so.IncludeUsage // pydantic's default is true
			g.contUsage = g.usage && so.ContinuousUsageStats
		}
		if o.forceIncludeUsage {
			g.usage, g.contUsage = true, true
		}
		g.stream(r.Context(), lrs, ch)
	} else {
		g.whole(r.Context(), lrs, ch)
	}
}

// maxHashedOutput is the longest answer whose blocks are hashed from its text for the prefix
// cache; a longer one's blocks are its own (rendering its text would cost more than it tells).
const maxHashedOutput = 1 << 15

// generation is one request's response.
type generation struct {
	sv               *server
	w                http.ResponseWriter
	chat             bool
	req              *apiRequest
	plans            []choicePlan
	nreq             int
	idStr            string
	in               int
	created          int64
	usage, contUsage bool
	arrival          time.Time
	last             []time.Time // per choice
	kv               *kvRequest  // the NixlConnector's part in the request, or nil
}

// observe records a token's timing in the server's histograms.
func (g *generation) observe(m tokenMsg) {
	now := time.Now()
	g.sv.mu.Lock()
	defer g.sv.mu.Unlock()
	if m.n == 1 {
		g.sv.hist.ttft.observe(now.Sub(g.arrival).Seconds())
		g.sv.hist.queue.observe(m.queue)
	} else {
		g.sv.hist.itl.observe(now.Sub(g.last[m.choice]).Seconds())
	}
	if m.finished {
		g.sv.hist.e2e.observe(now.Sub(g.arrival).Seconds())
	}
	g.last[m.choice] = now
}

// abortAll withdraws every choice still running.
func (g *generation) abortAll(lrs []*liveReq, done []bool) {
	for i, lr := range lrs {
		if !done[i] {
			g.sv.abort(lr)
			g.sv.requestDone("abort")
		}
	}
}

func (g *generation) object() string {
	if g.chat {
		return "chat.completion.chunk"
	}
	return "text_completion"
}

func (g *generation) usageOf(completion int) orderedMap {
	return orderedMap{{"prompt_tokens", g.in}, {"total_tokens", g.in + completion}, {"completion_tokens", completion}, {"prompt_tokens_details", nil}}
}

// toolCallJSON is a tool call as vLLM's ToolCall serialises.
func toolCallJSON(p *choicePlan) orderedMap {
	return orderedMap{{"id", p.tool.id}, {"type", "function"}, {"function", orderedMap{{"name", p.tool.name}, {"arguments", p.text(1, p.tokens)}}}}
}

// finishReason is what the response says: a tool call chosen by "auto" or "required"
// ends with "tool_calls", a named one with "stop", as in vLLM.
func finishReason(p *choicePlan) string {
	if p.tool != nil && p.tool.kind != "named" {
		return "tool_calls"
	}
	return p.finish
}

func (g *generation) whole(ctx context.Context, lrs []*liveReq, ch chan tokenMsg) {
	done := make([]bool, len(lrs))
	got := make([]int, len(lrs))
	left := len(lrs)
	for left > 0 {
		select {
		case <-ctx.Done():
			g.abortAll(lrs, done)
			return
		case m := <-ch:
			if m.failed {
				done[m.choice] = true
				g.abortAll(lrs, done)
				g.sv.requestDone("abort")
				writeError(g.w, http.StatusInternalServerError, "request does not fit in the KV cache")
				return
			}
			g.observe(m)
			if m.finished {
				done[m.choice], got[m.choice] = true, m.n
				left--
			}
		}
	}
	completion := 0
	choices := make([]any, len(g.plans))
	for i := range g.plans {
		p := &g.plans[i]
		n := got[i]
		completion += n
		var lp any
		if g.req.wantLogprob {
			if g.chat {
				lp = g.chatLogprobs(p, 0, n)
			} else {
				lp = g.completionLogprobs(p, 0, n, 0)
			}
		}
		if g.chat {
			msg := orderedMap{{"role", "assistant"}, {"content", p.text(0, n)}, {"tool_calls", []any{}}}
			if p.tool != nil {
				content := any("")
				if p.tool.kind == "auto" {
					content = nil
				}
				msg = orderedMap{{"role", "assistant"}, {"content", content}, {"tool_calls", []any{toolCallJSON(p)}}}
			}
			choices[i] = orderedMap{{"index", i}, {"message", msg}, {"logprobs", lp}, {"finish_reason", finishReason(p)}, {"stop_reason", nil}}
		} else {
			choices[i] = orderedMap{{"index", i}, {"text", p.text(0, n)}, {"logprobs", lp}, {"finish_reason", p.finish}, {"stop_reason", nil}, {"prompt_logprobs", nil}}
		}
		g.sv.requestDone(p.finish)
	}
	obj := "text_completion"
	if g.chat {
		obj = "chat.completion"
	}
	resp := orderedMap{{"id", g.idStr}, {"object", obj}, {"created", g.created},
		{"model", g.sv.o.Args.ServedModelName}, {"choices", choices}, {"usage", g.usageOf(completion)}}
	if p := g.sv.kvResponse(g.kv, g.idStr); p != nil {
		resp = append(resp, struct {
			k string
			v any
		}{"kv_transfer_params", p})
	}
	writeJSON(g.w, http.StatusOK, resp)
}

// chunk writes one SSE chunk with one choice; usage is nil or the chunk's usage.
func (g *generation) chunk(choice orderedMap, usage any) {
	c := orderedMap{{"id", g.idStr}, {"object", g.object()}, {"created", g.created}, {"model", g.sv.o.Args.ServedModelName}, {"choices", []any{choice}}}
	if usage != nil {
		c = append(c, struct {
			k string
			v any
		}{"usage", usage})
	}
	g.event(c)
}

func (g *generation) stream(ctx context.Context, lrs []*liveReq, ch chan tokenMsg) {
	h := g.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	g.w.WriteHeader(http.StatusOK)
	fl, _ := g.w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	flush()
	f := g.sv.o.Args.Faults
	malformed := f.MalformedStream > 0 && unitHash(uint64(g.nreq)) < f.MalformedStream
	si := max(g.sv.eng.cfg.StreamInterval, 1)
	done := make([]bool, len(lrs))
	sent := make([]int, len(lrs))  // tokens sent per choice
	chars := make([]int, len(lrs)) // characters sent per choice (text_offset)
	started := false
	left := len(lrs)
	cont := func(n int) any {
		if g.contUsage {
			return g.usageOf(n)
		}
		return nil
	}
	for left > 0 {
		select {
		case <-ctx.Done():
			g.abortAll(lrs, done)
			return
		case m := <-ch:
			if m.failed {
				done[m.choice] = true
				g.abortAll(lrs, done)
				g.sv.requestDone("abort")
				e := &apiError{status: http.StatusInternalServerError, typ: "InternalServerError", msg: "request does not fit in the KV cache"}
				g.event(e.body())
				io.WriteString(g.w, "data: [DONE]\n\n")
				flush()
				return
			}
			g.observe(m)
			i := m.choice
			p := &g.plans[i]
			if m.n != 1 && !m.finished && (m.n-1)%si != 0 {
				continue
			}
			if !started && g.chat {
				for j := range g.plans {
					g.chunk(orderedMap{{"index", j}, {"delta", orderedMap{{"role", "assistant"}, {"content", ""}}}, {"logprobs", nil}, {"finish_reason", nil}}, cont(0))
				}
			}
			started = true
			from, to := sent[i], m.n
			sent[i] = m.n
			var finish any
			if m.finished {
				finish = finishReason(p)
			}
			var lp any
			if g.req.wantLogprob {
				if g.chat {
					lp = g.chatLogprobs(p, from, to)
				} else {
					lp = g.completionLogprobs(p, from, to, chars[i])
				}
			}
			text := p.text(from, to)
			chars[i] += len(text)
			switch {
			case g.chat && p.tool != nil:
				if from == 0 {
					head := orderedMap{{"index", 0}, {"id", p.tool.id}, {"type", "function"}, {"function", orderedMap{{"name", p.tool.name}, {"arguments", ""}}}}
					g.chunk(orderedMap{{"index", i}, {"delta", orderedMap{{"tool_calls", []any{head}}}}, {"logprobs", nil}, {"finish_reason", nil}}, cont(1))
					from = 1
				}
				args := orderedMap{{"index", 0}, {"function", orderedMap{{"arguments", p.text(from, to)}}}}
				g.chunk(orderedMap{{"index", i}, {"delta", orderedMap{{"tool_calls", []any{args}}}}, {"logprobs", lp}, {"finish_reason", finish}}, cont(to))
			case g.chat:
				g.chunk(orderedMap{{"index", i}, {"delta", orderedMap{{"content", text}}}, {"logprobs", lp}, {"finish_reason", finish}}, cont(to))
			default:
				g.chunk(orderedMap{{"index", i}, {"text", text}, {"logprobs", lp}, {"finish_reason", finish}, {"stop_reason", nil}}, cont(to))
			}
			flush()
			if malformed {
				io.WriteString(g.w, "data: {\"id\": \""+g.idStr+"\", \"choices\": [{\"index\": 0, \"te\n\n")
				flush()
				g.abortAll(lrs, done)
				return
			}
			if f.StallAfter > 0 && m.n >= f.StallAfter && !m.finished {
				for j, lr := range lrs {
					if !done[j] {
						g.sv.abort(lr)
					}
				}
				<-ctx.Done() // keep the connection open, send nothing
				for j := range lrs {
					if !done[j] {
						g.sv.requestDone("abort")
					}
				}
				return
			}
			if m.finished {
				done[i] = true
				left--
				g.sv.requestDone(p.finish)
			}
		}
	}
	if g.usage {
		completion := 0
		for _, n := range sent {
			completion += n
		}
		g.event(orderedMap{{"id", g.idStr}, {"object", g.object()}, {"created", g.created}, {"model", g.sv.o.Args.ServedModelName},
			{"choices", []any{}}, {"usage", orderedMap{{"prompt_tokens", g.in}, {"total_tokens", g.in + completion}, {"completion_tokens", completion}}}})
	}
	io.WriteString(g.w, "data: [DONE]\n\n")
	flush()
}

func (g *generation) event(v any) {
	var b bytes.Buffer
	b.WriteString("data: ")
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	b.Truncate(b.Len() - 1) // Encode's newline
	b.WriteString("\n\n")
	g.w.Write(b.Bytes())
}
