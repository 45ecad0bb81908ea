package workload_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/workload"
)

// echoServer is an OpenAI-compatible server on loopback that answers every request with the
// reply " r<n>" (n: the request's arrival number) in one chunk, and keeps each request's
// prompt (or messages) with its arrival time.
type echoServer struct {
	mu    sync.Mutex
	n     int
	seen  []echoed
	start time.Time
}

type echoed struct {
	at       time.Duration
	prompt   string
	messages []workload.Message
	reply    string
}

func (s *echoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Prompt   string             `json:"prompt"`
		Messages []workload.Message `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	reply := fmt.Sprintf(" r%d", s.n)
	s.n++
	s.seen = append(s.seen, echoed{time.Since(s.start), body.Prompt, body.Messages, reply})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := map[string]any{"choices": []any{map[string]any{"index": 0, "text": reply}}}
	if strings.HasSuffix(r.URL.Path, "/chat/completions") {
		chunk = map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": reply}}}}
	}
	b, _ := json.Marshal(chunk)
	fmt.Fprintf(w, "data: %s\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", b)
}

func TestConversationsSendTheHistoryAsReceived(t *testing.T) {
	t.Parallel()
	for _, ep := range []string{workload.EndpointCompletions, workload.EndpointChat} {
		t.Run(ep, func(t *testing.T) {
			t.Parallel()
			es := &echoServer{start: time.Now()}
			srv := httptest.NewServer(es)
			defer srv.Close()
			c := workload.Class{Name: "chat", Conversations: 1, Endpoint: ep,
				Turns: fixed(3), ThinkTime: 50 * time.Millisecond, PrefixTokens: 8,
				InputTokens: fixed(6), OutputTokens: fixed(1),
				Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}}
			res, err := workload.Run(context.Background(), workload.Target{URL: srv.URL, Model: "m", TokenIDs: true}, []workload.Class{c}, workload.RunOptions{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(es.seen) != 3 {
				t.Fatalf("the server saw %d requests, want 3 turns", len(es.seen))
			}
			for i := 1; i < 3; i++ {
				prev, cur := es.seen[i-1], es.seen[i]
				if ep == workload.EndpointChat {
					want := append(append([]workload.Message{}, prev.messages...), workload.Message{Role: "assistant", Content: prev.reply})
					if len(cur.messages) != len(want)+1 {
						t.Fatalf("turn %d has %d messages, want %d", i+1, len(cur.messages), len(want)+1)
					}
					for j, m := range want {
						if cur.messages[j] != m {
							t.Errorf("turn %d, message %d = %+v, want %+v", i+1, j, cur.messages[j], m)
						}
					}
					if last := cur.messages[len(cur.messages)-1]; last.Role != "user" || !strings.HasPrefix(last.Content, fmt.Sprintf("Turn 0.%d:", i+1)) {
						t.Errorf("turn %d ends with %+v, want the user's new message", i+1, last)
					}
				} else {
					if want := prev.prompt + prev.reply + "\n"; !strings.HasPrefix(cur.prompt, want) {
						t.Errorf("turn %d's prompt %q does not start with the previous prompt and reply %q", i+1, cur.prompt, want)
					}
				}
				if gap := cur.at - prev.at; gap < 0 {
					t.Errorf("turn %d arrived before turn %d", i+1, i)
				}
			}
			if ep == workload.EndpointChat && (es.seen[0].messages[0].Role != "system" || len(strings.Fields(es.seen[0].messages[0].Content)) != 8) {
				t.Errorf("the first turn starts with %+v, want the 8-token shared prefix as a system message", es.seen[0].messages[0])
			}
			turns := map[int]bool{}
			for _, r := range res.Records {
				if !r.OK() {
					t.Fatalf("turn %d failed: %s", r.Turn, r.Err)
				}
				turns[r.Turn] = true
			}
			if len(turns) != 3 {
				t.Errorf("records carry turns %v, want 1, 2 and 3", turns)
			}
			if got := len(res.Measurement.Workloads["chat"].Turns); got != 3 {
				t.Errorf("%d turns in the breakdown, want 3", got)
			}
		})
	}
}

func TestConversationsWaitTheirThinkTime(t *testing.T) {
	t.Parallel()
	es := &echoServer{start: time.Now()}
	srv := httptest.NewServer(es)
	defer srv.Close()
	const think = 300 * time.Millisecond
	c := workload.Class{Name: "chat", Conversations: 1, Turns: fixed(4), ThinkTime: think,
		InputTokens: fixed(6), OutputTokens: fixed(1), Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}}
	reqs, err := workload.Load(c, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := workload.Run(context.Background(), workload.Target{URL: srv.URL, Model: "m"}, []workload.Class{c}, workload.RunOptions{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	byTurn := map[int]workload.Record{}
	for _, r := range res.Records {
		byTurn[r.Turn] = r
	}
	for turn := 2; turn <= 4; turn++ {
		gap := byTurn[turn].Sent - byTurn[turn-1].End
		want := reqs[turn-1].Think
		// Never sooner than the think time; later by what a loaded host's scheduler adds,
		// but short of waiting it twice (a margin of half the think time and 100 ms).
		if gap < want || gap > want+want/2+100*time.Millisecond {
			t.Errorf("turn %d was sent %v after the previous reply, want its think time %v", turn, gap, want)
		}
	}
}

func TestConversationsAreDrawnReproducibly(t *testing.T) {
	t.Parallel()
	c := workload.Class{Name: "chat", Conversations: 30, Warmup: 2, Turns: workload.Dist{Kind: workload.DistUniform, A: 1, B: 5},
		ThinkTime: time.Second, PrefixTokens: 100, PrefixGroups: 3,
		InputTokens: fixed(50), OutputTokens: fixed(20), Arrival: workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 2}}
	a, err := workload.Load(c, 5)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := workload.Load(c, 5)
	if len(a) != len(b) {
		t.Fatalf("two loads drew %d and %d turns", len(a), len(b))
	}
	groups := map[int]bool{}
	turns := map[int]int{}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			t.Fatalf("turn %d differs between two loads: %+v and %+v", i, a[i], b[i])
		}
		r := a[i]
		if r.Index != i || r.Turn < 1 || r.Turn > 5 {
			t.Fatalf("request %d: index %d turn %d", i, r.Index, r.Turn)
		}
		if r.Warmup != (r.Conversation < 2) {
			t.Errorf("turn %d of conversation %d: warmup %v", r.Turn, r.Conversation, r.Warmup)
		}
		if r.Turn > 1 {
			prev := a[i-1]
			if want := prev.InputTokens + prev.OutputTokens + r.NewTokens; r.InputTokens != want {
				t.Errorf("conversation %d turn %d: InputTokens %d, want %d (the history and the new tokens)", r.Conversation, r.Turn, r.InputTokens, want)
			}
			if r.PrefixGroup != prev.PrefixGroup {
				t.Errorf("conversation %d changed prefix group between turns", r.Conversation)
			}
		} else if r.InputTokens != 100+50 {
			t.Errorf("conversation %d's first turn: InputTokens %d, want the prefix and 50 new tokens", r.Conversation, r.InputTokens)
		}
		groups[r.PrefixGroup] = true
		turns[r.Conversation] = r.Turn
	}
	if len(turns) != 32 {
		t.Errorf("%d conversations, want 32 (2 warm-up)", len(turns))
	}
	if len(groups) != 3 {
		t.Errorf("prefix groups drawn: %v, want all 3", groups)
	}
}

// failingServer answers the n-th request (0-based, in arrival order) with HTTP 500 and the
// others as echoServer does.
type failingServer struct {
	echoServer
	fail int
}

func (s *failingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := s.n
	if n == s.fail {
		s.n++
	}
	s.mu.Unlock()
	if n == s.fail {
		http.Error(w, "simulated failure", http.StatusInternalServerError)
		return
	}
	s.echoServer.ServeHTTP(w, r)
}

func TestAFailedTurnEndsItsConversation(t *testing.T) {
	t.Parallel()
	fs := &failingServer{echoServer: echoServer{start: time.Now()}, fail: 1}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	c := workload.Class{Name: "chat", Conversations: 1, Turns: fixed(4),
		InputTokens: fixed(6), OutputTokens: fixed(1), Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}}
	res, err := workload.Run(context.Background(), workload.Target{URL: srv.URL, Model: "m"}, []workload.Class{c}, workload.RunOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]string{}
	for _, r := range res.Records {
		got[r.Turn] = r.ErrClass
	}
	// Turns 3 and 4 were never sent because the service failed turn 2: the conversation it
	// broke counts against error_rate, as failures of their own class.
	want := map[int]string{1: "", 2: workload.ErrHTTP, 3: workload.ErrNotSent, 4: workload.ErrNotSent}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("turns' outcomes %v, want %v: turn 2 failed, 3 and 4 never sent", got, want)
	}
	if n := len(fs.seen); n != 1 {
		t.Errorf("the server answered %d turns, want 1 (the second failed, the rest were not sent)", n)
	}
	m := res.Measurement.Workloads["chat"].Metrics
	if m[workload.Completed] != 1 || m[workload.Failed] != 3 || m[workload.Cancelled] != 0 || m[workload.ErrorRate] != 0.75 {
		t.Errorf("completed %v failed %v cancelled %v error rate %v, want 1, 3, 0 and 0.75", m[workload.Completed], m[workload.Failed], m[workload.Cancelled], m[workload.ErrorRate])
	}
}

// TestAClassWithoutConversationsKeepsItsJSON checks that the attributes of conversations
// leave a plain class's JSON as it was: plans hash their classes' JSON, and a study's
// workload seed and resume follow the hash.
func TestAClassWithoutConversationsKeepsItsJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(workload.Class{Name: "chat", Requests: 10, InputTokens: fixed(10), OutputTokens: fixed(10)})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"conversations", "turns", "think_time", "prefix_groups"} {
		if strings.Contains(string(b), `"`+key+`"`) {
			t.Errorf("a class without conversations has %q in its JSON: %s", key, b)
		}
	}
}

func TestSessionsOfAClassOfConversationsAreConversations(t *testing.T) {
	t.Parallel()
	three := workload.Dist{Kind: workload.DistFixed, A: 3}
	conv := workload.Class{Name: "conv", Conversations: 4, Warmup: 1, Turns: three}
	reqs := workload.Class{Name: "reqs", Requests: 4, Warmup: 1, Turns: three} // turns mean nothing here
	conv.AtLeast(10)
	reqs.AtLeast(2)
	if conv.Conversations != 10 || conv.Requests != 0 || reqs.Requests != 4 {
		t.Errorf("AtLeast: %d conversations, %d requests; %d requests; want 10, 0; 4", conv.Conversations, conv.Requests, reqs.Requests)
	}
	if got := conv.RequestsOf(conv.Sessions()); got != 33 {
		t.Errorf("11 conversations of 3 turns send %d requests, want 33", got)
	}
	if got := reqs.RequestsOf(reqs.Sessions()); got != 5 {
		t.Errorf("5 requests send %d, want 5", got)
	}
	conv.SetSessions(7)
	reqs.SetSessions(7)
	if conv.Conversations != 7 || conv.Warmup != 0 || reqs.Requests != 7 || reqs.Warmup != 0 {
		t.Errorf("SetSessions(7): %+v, %+v", conv, reqs)
	}
}
