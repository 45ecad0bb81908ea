package sim

import (
	"fmt"
	"sort"

	"github.com/frontier-llm/frontier/workload"
)

// This file is the estimator's side of classes of conversations: each turn is due when the
// previous reply has ended and the user's think time has passed, on the simulated clock, and
// its prompt is the history as the load generator sends it to the simulated server (one
// token per word, the chat template on the chat endpoint), so that the estimate and a
// benchmark of `frontier sim serve` see the same prompts and the same prefix-cache hits.

// turnPromptTokens is the prompt length of a turn sent after hist tokens of history: on the
// completions endpoint the history's text and the turn's new text; on the chat endpoint the
// history's messages, the turn's user message and the generation prompt. hist is 0 for a
// first turn, whose history is the shared prefix.
func turnPromptTokens(req *workload.Request, chat bool, hist int) int {
	text := max(req.NewTokens, 2) // the turn's marker is two words
	if req.Turn == 1 {
		hist = req.PrefixTokens
		if chat && hist > 0 {
			hist += chatTemplateTokens // the system message
		}
	}
	if chat {
		return hist + chatTemplateTokens + text + generationPromptTokens
	}
	return hist + text
}

// nextHistory is the history the turn after one of in prompt tokens is sent with, once the
// reply had generated tokens: the prompt and the reply; on the chat endpoint the generation
// prompt is replaced by the reply's assistant message.
func nextHistory(in, generated int, chat bool) int {
	if chat {
		return in - generationPromptTokens + chatTemplateTokens + generated
	}
	return in + generated
}

// conversation gives a turn's sequence its conversation's history blocks: the same content,
// block for block, as the turns before it and after it, as the server's hashes of the real
// prompts would be.
func (e *engine) conversation(s *seq, req *workload.Request, chat bool) {
	h := workload.PrefixSeed(req.Class, req.PrefixGroup) ^ uint64(req.Conversation+1)*0xd6e8feb86659fd93
	s.convSeed = mix(h ^ 0xc0ffee)
	s.convLen = -1
	if chat {
		s.convLen = s.prompt - generationPromptTokens
	}
}

// startConversations puts a class of conversations' first turns on the timeline: at their
// due times, all at once, or as many as the concurrency arrival keeps under way.
func (s *simState) startConversations(ci int) {
	reqs := s.reqs[ci]
	s.convs[ci] = workload.ConversationsOf(reqs)
	s.hist[ci] = make([]int, len(reqs))
	c := &s.classes[ci]
	switch c.Arrival.Kind {
	case workload.ArrivalConcurrency:
		k := min(max(c.Arrival.Concurrency, 1), len(s.convs[ci]))
		for _, cv := range s.convs[ci][:k] {
			s.pending = append(s.pending, arrival{0, ci, cv[0]})
		}
		s.next[ci] = k
	case workload.ArrivalImmediate:
		for _, cv := range s.convs[ci] {
			s.pending = append(s.pending, arrival{0, ci, cv[0]})
		}
		s.next[ci] = len(s.convs[ci])
	default:
		for _, cv := range s.convs[ci] {
			s.pending = append(s.pending, arrival{reqs[cv[0]].At.Seconds(), ci, cv[0]})
		}
		s.next[ci] = len(s.convs[ci])
	}
}

// ended is told that request ri of class ci ended at time at, with a reply of generated
// tokens when ok. A closed-loop class sends its next request; a class of conversations sends
// the conversation's next turn after its think time, or, when the conversation is over,
// starts the next one in closed loop. A turn that failed ends its conversation: the turns
// after it are recorded as failed, never sent (workload.ErrNotSent), as the load generator
// records them.
func (s *simState) ended(ci, ri int, at float64, generated int, ok bool) {
	if s.convs[ci] == nil {
		s.sendNext(ci, at)
		return
	}
	reqs := s.reqs[ci]
	next := ri + 1
	more := next < len(reqs) && reqs[next].Conversation == reqs[ri].Conversation
	if more && ok {
		rec := &s.recs[s.recIdx[ci][ri]]
		s.hist[ci][next] = nextHistory(rec.InputTokens, generated, s.classes[ci].Endpoint == workload.EndpointChat)
		s.schedule(arrival{at + reqs[next].Think.Seconds(), ci, next})
		return
	}
	for j := next; more && j < len(reqs) && reqs[j].Conversation == reqs[ri].Conversation; j++ {
		t := &reqs[j]
		s.recIdx[ci][j] = len(s.recs)
		s.recs = append(s.recs, workload.Record{Class: t.Class, Index: t.Index, Warmup: t.Warmup,
			Scheduled: dur(at), Sent: dur(at), End: dur(at), Conversation: t.Conversation, Turn: t.Turn,
			ErrClass: workload.ErrNotSent, Err: fmt.Sprintf("not sent: turn %d of the conversation failed", reqs[ri].Turn)})
	}
	if s.classes[ci].Arrival.Kind == workload.ArrivalConcurrency && s.next[ci] < len(s.convs[ci]) {
		s.schedule(arrival{at, ci, s.convs[ci][s.next[ci]][0]})
		s.next[ci]++
	}
}

// schedule puts an arrival on the timeline after those due no later.
func (s *simState) schedule(a arrival) {
	i := s.head + sort.Search(len(s.pending)-s.head, func(i int) bool { return s.pending[s.head+i].at > a.at })
	s.pending = append(s.pending, arrival{})
	copy(s.pending[i+1:], s.pending[i:])
	s.pending[i] = a
}
