package workload

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/frontier-llm/frontier/inputfile"
)

// Bounds on what datasets and traces may hold, so that any file is read in bounded time and
// memory.
const (
	// MaxTokens is the longest request frontier sends, in input or output tokens: two
	// million, above the context window of the models vLLM serves on one node. A longer
	// length in a trace, a dataset's max_tokens or a plan is refused; a length distribution's
	// draws are cut to it.
	MaxTokens = 1 << 21
	// MaxDatasetBytes is the largest dataset file read (ShareGPT's is about 670 MB).
	MaxDatasetBytes = 4 << 30
	// MaxTraceBytes is the largest trace file read.
	MaxTraceBytes = 1 << 30
	// MaxTraceGap is the longest wait between two requests of a trace that TraceWarnings
	// accepts without a warning.
	MaxTraceGap = time.Hour
)

// InputError is a problem with a file the user gave: a dataset or a trace. Line is 0 when
// the problem is not on one line.
type InputError struct {
	File string
	Line int
	Msg  string
	Err  error
}

// Error says "file:line: what was wrong".
func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error, such as the file system's.
func (e *InputError) Unwrap() error { return e.Err }

// Load returns a class's requests, warm-up first: the send times and lengths of a trace when
// the class arrives by trace (with prompts from its dataset if it has one), the prompts of its
// dataset otherwise, else synthetic requests (Synthesize). The same class and seed give the
// same requests.
//
// A dataset is JSONL, one object a line with "prompt" (a string) or "messages" (chat
// messages) and an optional "max_tokens", or ShareGPT's JSON: an array of objects whose
// "conversations" list turns {"from": "human"|"gpt", "value": ...}; the first human turn is
// the prompt and the reply's length sets the output length. Warmup+Requests entries are drawn
// from the file without replacement (and cycled when it has fewer). Output lengths come from
// max_tokens, else the class's output_tokens, else the ShareGPT reply, else the server's
// default. Input lengths of prompts are estimates (4 characters a token); the recorded lengths
// are the server's.
//
// A trace is JSONL, one request a line: {"timestamp": seconds, "input_tokens": n,
// "output_tokens": n}; lines are sent at their timestamps relative to the first one. The
// lengths may be left out when the class has input_tokens and output_tokens.
//
// A class of conversations is synthetic (see Synthesize); with a trace, the trace's lines
// start its conversations and give their first turns' lengths.
//
// Errors are *InputError values that name the file and line.
func Load(c Class, seed uint64) ([]Request, error) {
	return LoadContext(context.Background(), c, seed)
}

// LoadContext is Load that stops reading a dataset or trace when ctx is done, even while a
// read of the file is blocked: the error then wraps ctx's error (and is no *InputError) and
// names the file being read. A read that gets no data for inputfile.MaxStall fails.
func LoadContext(ctx context.Context, c Class, seed uint64) ([]Request, error) {
	seed = classSeed(c, seed)
	switch {
	case c.Conversations > 0 && c.Dataset != "":
		return nil, fmt.Errorf("workload %q: a class of conversations draws its turns from input_tokens and output_tokens, not from a dataset", c.Name)
	case c.Conversations > 0 && c.Arrival.Kind == ArrivalTrace:
		// The trace's lines start the conversations, their lengths the first turns'.
		starts := c
		starts.Requests, starts.Conversations, starts.Dataset = c.Conversations, 0, ""
		first, err := loadTrace(ctx, starts, seed)
		if err != nil {
			return nil, err
		}
		return conversations(c, seed, first), nil
	case c.Arrival.Kind == ArrivalTrace:
		reqs, err := loadTrace(ctx, c, seed)
		if err == nil && c.Dataset == "" {
			for i, g := range prefixGroups(c, seed, len(reqs)) {
				reqs[i].PrefixGroup = g
			}
		}
		return reqs, err
	case c.Dataset != "":
		n := c.Warmup + c.Requests
		entries, err := readDataset(ctx, c.Dataset, n, seed)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			n = len(entries)
		}
		lengths := rand.New(rand.NewPCG(seed, hashName(c.Name)))
		reqs := make([]Request, n)
		for i := range reqs {
			reqs[i] = entries[i%len(entries)].request(c, lengths)
		}
		arrange(c, seed, reqs, true)
		return reqs, nil
	default:
		return Synthesize(c, seed)
	}
}

// entry is one prompt of a dataset.
type entry struct {
	prompt    string
	messages  []Message
	maxTokens int
	replyLen  int // estimated tokens of the recorded reply (ShareGPT)
}

func (e entry) request(c Class, lengths *rand.Rand) Request {
	r := Request{Prompt: e.prompt, Messages: e.messages}
	switch {
	case e.maxTokens > 0:
		r.OutputTokens = e.maxTokens
	case c.OutputTokens.IsSet():
		r.OutputTokens = c.OutputTokens.Sample(lengths)
	default:
		r.OutputTokens = e.replyLen
	}
	n := estimateTokens(e.prompt)
	for _, m := range e.messages {
		n += estimateTokens(m.Content)
	}
	r.InputTokens = max(n, 1)
	return r
}

// estimateTokens guesses the tokens of English text: about 4 characters a token.
func estimateTokens(s string) int {
	if s == "" {
		return 0
	}
	return max(1, (len(s)+2)/4)
}

// readDataset reads a dataset and draws n of its entries (all of them when n is 0), in an
// order fixed by seed.
func readDataset(ctx context.Context, path string, n int, seed uint64) ([]entry, error) {
	f, _, err := inputfile.Open(path, MaxDatasetBytes)
	if err != nil {
		return nil, &InputError{File: path, Msg: "cannot read the dataset", Err: err}
	}
	defer f.Close()
	entries, err := readDatasetFrom(path, inputfile.NewReader(ctx, f, path), n, seed)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("reading the dataset %s: %w", path, ctx.Err())
	}
	return entries, err
}

// readDatasetFrom reads the dataset named path from r; see readDataset.
func readDatasetFrom(path string, r io.Reader, n int, seed uint64) ([]entry, error) {
	s := newSampler(n, seed)
	br := bufio.NewReaderSize(r, 1<<16)
	first, err := firstByte(br)
	if err != nil {
		return nil, &InputError{File: path, Msg: "cannot read the dataset", Err: err}
	}
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
	}
	if first == '[' {
		err = readShareGPT(path, br, s.add)
	} else {
		err = readJSONL(path, br, s.add)
	}
	if err != nil {
		return nil, err
	}
	if len(s.kept) == 0 {
		return nil, &InputError{File: path, Msg: "no usable entries: want JSONL lines with \"prompt\" or \"messages\", or ShareGPT conversations with a human turn followed by a reply"}
	}
	return s.result(), nil
}

// skipBOM returns a reader of r without the UTF-8 byte order mark r may start with.
func skipBOM(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	if bom, _ := br.Peek(len(inputfile.BOM)); string(bom) == inputfile.BOM {
		br.Discard(len(inputfile.BOM))
	}
	return br
}

// firstByte peeks at the first byte that is not white space or a byte order mark, without
// consuming anything; 0 when there is none in the first 64 KiB.
func firstByte(br *bufio.Reader) (byte, error) {
	head, err := br.Peek(1 << 16)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return 0, err
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 {
		return 0, nil
	}
	return head[0], nil
}

// sampler keeps a uniform sample of n entries of a stream (reservoir sampling), so a large
// dataset is never held whole.
type sampler struct {
	n    int
	seen int
	kept []entry
	r    *rand.Rand
}

func newSampler(n int, seed uint64) *sampler {
	return &sampler{n: n, r: rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))}
}

func (s *sampler) add(e entry) {
	s.seen++
	if s.n == 0 || len(s.kept) < s.n {
		s.kept = append(s.kept, e)
		return
	}
	if j := s.r.IntN(s.seen); j < s.n {
		s.kept[j] = e
	}
}

func (s *sampler) result() []entry {
	s.r.Shuffle(len(s.kept), func(i, j int) { s.kept[i], s.kept[j] = s.kept[j], s.kept[i] })
	return s.kept
}

// jsonlLine is one line of a JSONL dataset.
type jsonlLine struct {
	Prompt    *string   `json:"prompt"`
	Messages  []Message `json:"messages"`
	MaxTokens *int      `json:"max_tokens"`
}

// readJSONL reads a JSONL dataset and hands each entry to add.
func readJSONL(path string, r io.Reader, add func(entry)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), MaxDatasetLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		e, err := parseJSONLLine(b)
		if err != nil {
			return &InputError{File: path, Line: line, Msg: err.Error()}
		}
		add(e)
	}
	if err := sc.Err(); err != nil {
		return scanError(path, line+1, err, MaxDatasetLine)
	}
	return nil
}

// MaxDatasetLine is the longest line a JSONL dataset may hold, in bytes.
const MaxDatasetLine = 256 << 20

// MaxTraceLine is the longest line a trace may hold, in bytes.
const MaxTraceLine = 1 << 20

// scanError is the *InputError of a line a bufio.Scanner could not read: one longer than
// limit bytes says so, in place of the scanner's "token too long".
func scanError(path string, line int, err error, limit int) *InputError {
	if errors.Is(err, bufio.ErrTooLong) {
		return &InputError{File: path, Line: line, Msg: fmt.Sprintf("the line is longer than %s, the most one line may hold; split it or shorten it", byteSize(limit))}
	}
	return &InputError{File: path, Line: line, Msg: "cannot read the line", Err: err}
}

// byteSize writes n bytes as MiB or KiB when it is a whole number of them.
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func parseJSONLLine(b []byte) (entry, error) {
	var l jsonlLine
	if err := json.Unmarshal(b, &l); err != nil {
		return entry{}, fmt.Errorf("not a JSON object: %v", err)
	}
	var e entry
	switch {
	case l.Prompt != nil && l.Messages != nil:
		return entry{}, errors.New(`both "prompt" and "messages": give one of them`)
	case l.Prompt != nil:
		if *l.Prompt == "" {
			return entry{}, errors.New(`"prompt" is empty`)
		}
		e.prompt = *l.Prompt
	case len(l.Messages) > 0:
		for i, m := range l.Messages {
			if m.Role == "" {
				return entry{}, fmt.Errorf(`message %d has no "role"`, i+1)
			}
		}
		e.messages = l.Messages
	default:
		return entry{}, errors.New(`no "prompt" (a string) or "messages" (a list of {"role", "content"})`)
	}
	if l.MaxTokens != nil {
		if *l.MaxTokens < 1 || *l.MaxTokens > MaxTokens {
			return entry{}, fmt.Errorf(`"max_tokens" is %d; it must be at least 1 and at most %d`, *l.MaxTokens, MaxTokens)
		}
		e.maxTokens = *l.MaxTokens
	}
	return e, nil
}

// shareGPTItem is one conversation of ShareGPT's JSON.
type shareGPTItem struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// readShareGPT reads ShareGPT's JSON array one conversation at a time. Conversations without
// a human turn followed by a reply are skipped, as vllm bench serve does.
func readShareGPT(path string, r io.Reader, add func(entry)) error {
	dec := json.NewDecoder(r)
	fail := func(msg string, err error) error {
		return &InputError{File: path, Line: lineAt(path, dec.InputOffset()), Msg: msg, Err: err}
	}
	if _, err := dec.Token(); err != nil {
		return fail("not a ShareGPT JSON array", err)
	}
	for i := 0; dec.More(); i++ {
		var item shareGPTItem
		if err := dec.Decode(&item); err != nil {
			return fail(fmt.Sprintf("conversation %d is not a ShareGPT object", i+1), err)
		}
		if e, ok := shareGPTEntry(item); ok {
			add(e)
		}
	}
	if _, err := dec.Token(); err != nil {
		return fail("the ShareGPT array does not end", err)
	}
	return nil
}

func shareGPTEntry(item shareGPTItem) (entry, bool) {
	turns := item.Conversations
	for i := 0; i+1 < len(turns); i++ {
		if !isHuman(turns[i].From) || turns[i].Value == "" {
			continue
		}
		if isHuman(turns[i+1].From) {
			continue
		}
		return entry{prompt: turns[i].Value, replyLen: max(1, estimateTokens(turns[i+1].Value))}, true
	}
	return entry{}, false
}

func isHuman(from string) bool { return from == "human" || from == "user" }

// lineAt returns the line of a byte offset of a file, for error messages; 0 if the file
// cannot be read again.
func lineAt(path string, offset int64) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	br := bufio.NewReader(io.LimitReader(f, offset))
	line := 1
	for {
		b, err := br.ReadByte()
		if err != nil {
			return line
		}
		if b == '\n' {
			line++
		}
	}
}

// traceLine is one line of a trace.
type traceLine struct {
	Timestamp    *float64 `json:"timestamp"`
	InputTokens  *int     `json:"input_tokens"`
	OutputTokens *int     `json:"output_tokens"`
}

// loadTrace reads the class's trace and turns its first Warmup+Requests lines (all of them
// when that is 0) into requests at their timestamps.
func loadTrace(ctx context.Context, c Class, seed uint64) ([]Request, error) {
	path := c.Arrival.TraceFile
	if path == "" {
		return nil, fmt.Errorf("workload %q: trace arrival without a trace file", c.Name)
	}
	f, _, err := inputfile.Open(path, MaxTraceBytes)
	if err != nil {
		return nil, &InputError{File: path, Msg: "cannot read the trace", Err: err}
	}
	defer f.Close()
	reqs, err := readTrace(path, inputfile.NewReader(ctx, f, path), c, seed)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("reading the trace %s: %w", path, ctx.Err())
	}
	if err != nil {
		return nil, err
	}
	if c.Dataset != "" {
		entries, err := readDataset(ctx, c.Dataset, len(reqs), seed)
		if err != nil {
			return nil, err
		}
		for i := range reqs {
			e := entries[i%len(entries)]
			reqs[i].Prompt, reqs[i].Messages = e.prompt, e.messages
			reqs[i].PrefixTokens = 0
		}
	}
	return reqs, nil
}

// readTrace parses a trace: requests in time order, At relative to the first. A UTF-8 byte
// order mark before the first line is skipped, as in datasets and evaluation sets.
func readTrace(path string, r io.Reader, c Class, seed uint64) ([]Request, error) {
	want := c.Warmup + c.Requests
	lengths := rand.New(rand.NewPCG(seed, hashName(c.Name)))
	sc := bufio.NewScanner(skipBOM(r))
	sc.Buffer(make([]byte, 0, 4096), MaxTraceLine)
	var reqs []Request
	var stamps []float64
	line := 0
	for sc.Scan() && (want == 0 || len(reqs) < want) {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		req, ts, err := parseTraceLine(b, c, lengths)
		if err != nil {
			return nil, &InputError{File: path, Line: line, Msg: err.Error()}
		}
		reqs = append(reqs, req)
		stamps = append(stamps, ts)
	}
	if err := sc.Err(); err != nil {
		return nil, scanError(path, line+1, err, MaxTraceLine)
	}
	if len(reqs) == 0 {
		return nil, &InputError{File: path, Msg: `no requests: want JSONL lines {"timestamp": seconds, "input_tokens": n, "output_tokens": n}`}
	}
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case stamps[a] < stamps[b]:
			return -1
		case stamps[a] > stamps[b]:
			return 1
		}
		return 0
	})
	sorted := make([]Request, len(reqs))
	t0 := stamps[order[0]]
	for i, j := range order {
		sorted[i] = reqs[j]
		sorted[i].At = time.Duration(math.Round((stamps[j] - t0) * float64(time.Second)))
	}
	arrange(c, seed, sorted, false)
	return sorted, nil
}

func parseTraceLine(b []byte, c Class, lengths *rand.Rand) (Request, float64, error) {
	var l traceLine
	if err := json.Unmarshal(b, &l); err != nil {
		return Request{}, 0, fmt.Errorf("not a JSON object: %v", err)
	}
	if l.Timestamp == nil {
		return Request{}, 0, errors.New(`no "timestamp" (seconds)`)
	}
	ts := *l.Timestamp
	if ts < 0 || math.IsNaN(ts) || ts > 1e9 {
		return Request{}, 0, fmt.Errorf(`"timestamp" is %v; want seconds, at least 0`, ts)
	}
	req := Request{PrefixTokens: c.PrefixTokens}
	var err error
	if req.InputTokens, err = traceLength(l.InputTokens, "input_tokens", c.InputTokens, lengths); err != nil {
		return Request{}, 0, err
	}
	if req.OutputTokens, err = traceLength(l.OutputTokens, "output_tokens", c.OutputTokens, lengths); err != nil {
		return Request{}, 0, err
	}
	if req.InputTokens <= c.PrefixTokens {
		req.InputTokens = c.PrefixTokens + 1
	}
	return req, ts, nil
}

func traceLength(v *int, name string, d Dist, lengths *rand.Rand) (int, error) {
	switch {
	case v != nil && *v >= 1 && *v <= MaxTokens:
		return *v, nil
	case v != nil:
		return 0, fmt.Errorf("%q is %d; it must be at least 1 and at most %d (MaxTokens)", name, *v, MaxTokens)
	case d.IsSet():
		return d.Sample(lengths), nil
	default:
		return 0, fmt.Errorf("no %q, and the workload has no %s distribution to draw it from", name, name)
	}
}

// TraceWarnings returns what looks wrong in the trace at path without being an error: a wait
// longer than MaxTraceGap between two requests, which the study would sit through in every
// trial. A trace that cannot be read or parsed has no warnings here: Load reports it.
func TraceWarnings(path string) []string {
	f, _, err := inputfile.Open(path, MaxTraceBytes)
	if err != nil {
		return nil
	}
	defer f.Close()
	type stamp struct {
		at   float64
		line int
	}
	var stamps []stamp
	sc := bufio.NewScanner(skipBOM(inputfile.NewReader(context.Background(), f, path)))
	sc.Buffer(make([]byte, 0, 4096), MaxTraceLine)
	for line := 1; sc.Scan(); line++ {
		var l traceLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Timestamp != nil {
			stamps = append(stamps, stamp{*l.Timestamp, line})
		}
	}
	slices.SortStableFunc(stamps, func(a, b stamp) int { return cmp.Compare(a.at, b.at) })
	gap, at := 0.0, 0
	for i := 1; i < len(stamps); i++ {
		if g := stamps[i].at - stamps[i-1].at; g > gap {
			gap, at = g, i
		}
	}
	if gap <= MaxTraceGap.Seconds() {
		return nil
	}
	return []string{fmt.Sprintf("the trace %s waits %s between the request on line %d and the next, on line %d (the longest gap accepted without this warning is %v): every trial would wait that long",
		path, humanSeconds(gap), stamps[at-1].line, stamps[at].line, MaxTraceGap)}
}

// humanSeconds writes a long wait in the largest unit that fits: "115.7 days".
func humanSeconds(s float64) string {
	switch {
	case s >= 86400:
		return fmt.Sprintf("%.1f days", s/86400)
	case s >= 3600:
		return fmt.Sprintf("%.1f hours", s/3600)
	}
	return fmt.Sprintf("%.0f s", s)
}
