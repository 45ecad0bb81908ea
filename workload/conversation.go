package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds classes of conversations: drawing their turns, rendering each turn's prompt
// from the history as received, and driving the turns one after another with the users'
// think time between them.

// conversations draws a class of conversations: the first turn of each conversation comes
// from starts (its send time, and its lengths when they are set), the later turns from the
// class's distributions. Turns are in conversation order, each conversation's turns in turn
// order; Index is the position in that order.
func conversations(c Class, seed uint64, starts []Request) []Request {
	lengths := rand.New(rand.NewPCG(seed^0x94d049bb133111eb, hashName(c.Name)))
	thinks := rand.New(rand.NewPCG(seed^0xbf58476d1ce4e5b9, hashName(c.Name)))
	cancels := rand.New(rand.NewPCG(seed^0x5851f42d4c957f2d, hashName(c.Name)))
	groups := prefixGroups(c, seed, len(starts))
	var reqs []Request
	for conv, st := range starts {
		turns := 1
		if c.Turns.IsSet() {
			turns = min(c.Turns.Sample(lengths), MaxTurns)
		}
		history := c.PrefixTokens
		for t := 1; t <= turns; t++ {
			r := Request{Class: c.Name, Index: len(reqs), Warmup: conv < c.Warmup,
				PrefixTokens: c.PrefixTokens, PrefixGroup: groups[conv], Conversation: conv, Turn: t}
			switch {
			case t == 1 && st.InputTokens > 0:
				r.NewTokens, r.OutputTokens = max(st.InputTokens-c.PrefixTokens, 1), st.OutputTokens
			default:
				r.NewTokens, r.OutputTokens = c.InputTokens.Sample(lengths), c.OutputTokens.Sample(lengths)
			}
			if t == 1 {
				r.At = st.At
			} else if c.ThinkTime > 0 {
				r.Think = time.Duration(thinks.ExpFloat64() * float64(c.ThinkTime))
			}
			r.InputTokens = min(history+r.NewTokens, MaxTokens)
			history += r.NewTokens + r.OutputTokens
			r.Cancel = c.CancelFraction > 0 && cancels.Float64() < c.CancelFraction
			reqs = append(reqs, r)
		}
	}
	return reqs
}

// conversationStarts are the first turns of a synthetic class of conversations: their send
// times on the class's arrival process, lengths left to conversations.
func conversationStarts(c Class, seed uint64) []Request {
	starts := make([]Request, c.Sessions())
	gaps := rand.New(rand.NewPCG(seed^0x9e3779b97f4a7c15, hashName(c.Name)))
	var at time.Duration
	for i := range starts {
		starts[i].At = at
		at += Gap(c.Arrival, gaps)
	}
	return starts
}

// prefixGroups draws which shared prefix each of n requests or conversations starts with:
// all 0 unless the class has PrefixGroups above 1.
func prefixGroups(c Class, seed uint64, n int) []int {
	g := make([]int, n)
	if c.PrefixGroups <= 1 || c.PrefixTokens == 0 {
		return g
	}
	r := rand.New(rand.NewPCG(seed^0x2545f4914f6cdd1d, hashName(c.Name)))
	for i := range g {
		g[i] = r.IntN(c.PrefixGroups)
	}
	return g
}

// PrefixSeed is the seed of a class's shared prefix number group: the load generator renders
// the prefix from it, and the simulator's estimator derives the prefix's KV blocks from it.
func PrefixSeed(class string, group int) uint64 {
	h := hashName(class)
	if group > 0 {
		h ^= uint64(group) * 0x9e3779b97f4a7c15
	}
	return h
}

// IsConversations reports whether reqs is a class of conversations.
func IsConversations(reqs []Request) bool { return len(reqs) > 0 && reqs[0].Turn > 0 }

// ConversationsOf splits a class of conversations into its conversations: index ranges
// [from, to) of reqs, one per conversation, in order.
func ConversationsOf(reqs []Request) [][2]int {
	var out [][2]int
	for i := 0; i < len(reqs); {
		j := i + 1
		for j < len(reqs) && reqs[j].Conversation == reqs[i].Conversation {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// history is what a conversation has said so far, as the client sends it: text for the
// completions endpoint, messages for the chat endpoint.
type history struct {
	text strings.Builder
	msgs []Message
}

// turnText is the new text of a turn: n tokens (about n on a real tokenizer, one word a token
// on the simulator) after a marker naming the conversation and the turn.
func turnText(req *Request) string {
	r := rand.New(rand.NewPCG(hashName(req.Class)^uint64(req.Conversation+1)*0xff51afd7ed558ccd, uint64(req.Turn)))
	return renderText(r, max(req.NewTokens, 2), "Turn "+strconv.Itoa(req.Conversation)+"."+strconv.Itoa(req.Turn)+":")
}

// prompt sets the turn's prompt: the history so far and the turn's new text.
func (h *history) prompt(req *Request, chat bool, prefix string) {
	text := turnText(req)
	if chat {
		if len(h.msgs) == 0 && prefix != "" {
			h.msgs = append(h.msgs, Message{Role: "system", Content: prefix})
		}
		h.msgs = append(h.msgs, Message{Role: "user", Content: text})
		req.Messages = h.msgs
		return
	}
	if h.text.Len() == 0 && prefix != "" {
		h.text.WriteString(prefix)
	}
	if h.text.Len() > 0 {
		h.text.WriteByte('\n')
	}
	h.text.WriteString(text)
	req.Prompt = h.text.String()
}

// answer adds a turn's reply, as received, to the history.
func (h *history) answer(reply string, chat bool) {
	if chat {
		h.msgs = append(h.msgs, Message{Role: "assistant", Content: reply})
		return
	}
	h.text.WriteString(reply)
}

// converse sends one conversation's turns in order: each after the previous reply and the
// turn's think time. A turn that fails ends the conversation: its later turns are recorded
// as failed (ErrNotSent), since the service broke the conversation, or as cancelled when the
// client abandoned the turn itself (cancel_fraction).
func converse(ctx context.Context, cl *client, c *Class, turns []Request, scheduled time.Duration, retry func(*Record) (time.Duration, bool), out chan<- Record) {
	cp := cl.prefix[c.Name]
	chat := cp != nil && cp.endpoint == EndpointChat
	prefix := ""
	if cp != nil {
		prefix = cp.group(turns[0].PrefixGroup).text
	}
	var h history
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := range turns {
		req := turns[i] // a copy: the prompt is this run's
		if i > 0 && req.Think > 0 {
			timer.Reset(req.Think)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		h.prompt(&req, chat, prefix)
		at := scheduled
		if i > 0 {
			at = cl.since()
		}
		rec, ok := sendTurn(ctx, cl, c, &req, at, retry, out)
		if !ok {
			if ctx.Err() != nil {
				return
			}
			class := ErrNotSent
			if rec.ErrClass == ErrCancelled {
				class = ErrCancelled
			}
			for j := i + 1; j < len(turns); j++ {
				t := &turns[j]
				now := cl.since()
				out <- Record{Class: t.Class, Index: t.Index, Warmup: t.Warmup, Scheduled: now, Sent: now, End: now,
					Conversation: t.Conversation, Turn: t.Turn, ErrClass: class,
					Err: fmt.Sprintf("not sent: turn %d of the conversation failed (%s)", req.Turn, rec.ErrClass)}
			}
			return
		}
		h.answer(rec.reply, chat)
	}
}

// sendTurn sends one turn, again while retry says so, and reports whether it got a reply
// (a turn abandoned after its first chunk has one).
func sendTurn(ctx context.Context, cl *client, c *Class, req *Request, at time.Duration, retry func(*Record) (time.Duration, bool), out chan<- Record) (Record, bool) {
	for attempt := 0; ; attempt++ {
		rec := Record{Scheduled: at, Attempt: attempt}
		cl.do(ctx, req, c.Timeout, &rec)
		out <- rec
		if rec.OK() || (rec.ErrClass == ErrCancelled && len(rec.Chunks) > 0 && ctx.Err() == nil) {
			return rec, true
		}
		if retry == nil || rec.ErrClass == ErrCancelled || ctx.Err() != nil {
			return rec, false
		}
		wait, again := retry(&rec)
		if !again {
			return rec, false
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return rec, false
		}
	}
}

// driveConversations starts a class's conversations: open loop at their first turns' due
// times, or, for a concurrency arrival, with Arrival.Concurrency conversations under way at
// once.
func driveConversations(ctx context.Context, cl *client, c *Class, reqs []Request, retry func(*Record) (time.Duration, bool), out chan<- Record) {
	convs := ConversationsOf(reqs)
	var wg sync.WaitGroup
	defer wg.Wait()
	if c.Arrival.Kind == ArrivalConcurrency {
		var next atomic.Int64
		for w := 0; w < max(c.Arrival.Concurrency, 1); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					i := int(next.Add(1) - 1)
					if i >= len(convs) {
						return
					}
					converse(ctx, cl, c, reqs[convs[i][0]:convs[i][1]], cl.since(), nil, out)
				}
			}()
		}
		return
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for _, cv := range convs {
		first := &reqs[cv[0]]
		if !waitUntil(ctx, cl, timer, first.At) {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			converse(ctx, cl, c, reqs[cv[0]:cv[1]], first.At, retry, out)
		}()
	}
}

// appendChunkText appends the text a stream chunk carries for its first choice (the
// completion's text, or the chat delta's content) to b.
func appendChunkText(b, payload []byte) []byte {
	var j struct {
		Choices []struct {
			Text  *string `json:"text"`
			Delta *struct {
				Content *string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(payload, &j) != nil || len(j.Choices) == 0 {
		return b
	}
	switch ch := j.Choices[0]; {
	case ch.Text != nil:
		b = append(b, *ch.Text...)
	case ch.Delta != nil && ch.Delta.Content != nil:
		b = append(b, *ch.Delta.Content...)
	}
	return b
}
