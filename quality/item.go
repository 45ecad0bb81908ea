package quality

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/frontier-llm/frontier/inputfile"
	"io"
	"regexp"
	"strings"
)

// maxLineBytes is the longest line an evaluation set may have.
const maxLineBytes = 16 << 20

// Message is one chat message of an item.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Item is one entry of an evaluation set: what to ask, and what a good answer looks like.
type Item struct {
	// ID names the item; unique within its set.
	ID string `json:"id"`
	// Prompt is a plain completion prompt; Messages a chat. Exactly one of them is set.
	Prompt   string    `json:"prompt,omitempty"`
	Messages []Message `json:"messages,omitempty"`
	// Reference is the expected answer, for exact, chrf, rouge_l and judge.
	Reference string `json:"reference,omitempty"`
	// Contains lists strings that must appear in the answer (the contains scorer); a set may
	// give one string instead of a list of one.
	Contains []string `json:"contains,omitempty"`
	// Regex is a regular expression (Go RE2 syntax) the answer must match (the regex scorer).
	Regex string `json:"regex,omitempty"`
	// JSON says the answer must parse as JSON.
	JSON bool `json:"json,omitempty"`
	// MaxTokens caps the answer's length; 0 means the generator's default.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Source is where the item came from, "file:line", for messages; empty for items built
	// in code.
	Source string `json:"-"`

	re *regexp.Regexp
}

// Text returns the item's prompt as one string: the prompt, or the chat's messages joined
// by newlines.
func (it *Item) Text() string {
	if it.Messages == nil {
		return it.Prompt
	}
	parts := make([]string, len(it.Messages))
	for i, m := range it.Messages {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n")
}

// where names the item in messages.
func (it *Item) where() string {
	if it.Source != "" {
		return fmt.Sprintf("%s: item %q", it.Source, it.ID)
	}
	return fmt.Sprintf("item %q", it.ID)
}

// compiled returns the item's compiled Regex, or nil when it has none.
func (it *Item) compiled() (*regexp.Regexp, error) {
	if it.Regex == "" {
		return nil, nil
	}
	if it.re != nil {
		return it.re, nil
	}
	return regexp.Compile(it.Regex)
}

// MaxSetBytes is the largest evaluation set file read.
const MaxSetBytes = 256 << 20

// LoadSet reads the evaluation set in the JSONL file at path. A path that is not a regular
// file (a named pipe, a device) or a file over MaxSetBytes is refused before it is read, and
// a read that gets no data for inputfile.MaxStall fails.
func LoadSet(path string) ([]Item, error) {
	f, _, err := inputfile.Open(path, MaxSetBytes)
	if err != nil {
		return nil, fmt.Errorf("evaluation set: %w", err)
	}
	defer f.Close()
	return ReadSet(inputfile.NewReader(context.Background(), f, path), path)
}

// ReadSet reads an evaluation set in JSONL from r: one JSON object a line, blank lines
// skipped. name is used in error messages ("name:line: ..."). Every bad line is reported,
// not only the first.
func ReadSet(r io.Reader, name string) ([]Item, error) {
	br := bufio.NewReader(r)
	var (
		items []Item
		errs  []error
		seen  = map[string]int{}
	)
	for line := 1; ; line++ {
		raw, err := readLine(br)
		if errors.Is(err, io.EOF) && raw == nil {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, line, err))
			break
		}
		if line == 1 {
			raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		it, perr := parseItem(raw)
		if perr != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, line, perr))
			continue
		}
		it.Source = fmt.Sprintf("%s:%d", name, line)
		if first, dup := seen[it.ID]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: id %q is already used on line %d; ids must be unique", name, line, it.ID, first))
			continue
		}
		seen[it.ID] = line
		items = append(items, it)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no items; an evaluation set has one JSON object a line", name)
	}
	return items, nil
}

// readLine returns the next line without its line ending, or io.EOF after the last one.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLineBytes {
			return nil, fmt.Errorf("line longer than %d bytes", maxLineBytes)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(buf) == 0 {
				return nil, err
			}
			return bytes.TrimSuffix(buf, []byte("\r")), io.EOF
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		return bytes.TrimSuffix(buf, []byte("\r")), nil
	}
}

// rawItem is an item as written, with the id allowed to be a number.
type rawItem struct {
	ID        json.RawMessage `json:"id"`
	Prompt    *string         `json:"prompt"`
	Messages  []Message       `json:"messages"`
	Reference *string         `json:"reference"`
	Contains  json.RawMessage `json:"contains"`
	Regex     *string         `json:"regex"`
	JSON      *bool           `json:"json"`
	MaxTokens *int            `json:"max_tokens"`
}

// knownFields lists the fields of an item, for the unknown-field message.
const knownFields = "id, prompt, messages, reference, contains, regex, json, max_tokens"

func parseItem(raw []byte) (Item, error) {
	var ri rawItem
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ri); err != nil {
		return Item{}, describeJSONError(err)
	}
	if dec.More() {
		return Item{}, errors.New("more than one JSON value on the line; put one item on each line")
	}
	var it Item
	id, err := parseID(ri.ID)
	if err != nil {
		return Item{}, err
	}
	it.ID = id
	switch {
	case ri.Prompt != nil && ri.Messages != nil:
		return Item{}, fmt.Errorf("item %q has both \"prompt\" and \"messages\"; give exactly one", id)
	case ri.Prompt == nil && ri.Messages == nil:
		return Item{}, fmt.Errorf("item %q has neither \"prompt\" nor \"messages\"; give exactly one", id)
	case ri.Prompt != nil:
		if strings.TrimSpace(*ri.Prompt) == "" {
			return Item{}, fmt.Errorf("item %q: \"prompt\" is empty", id)
		}
		it.Prompt = *ri.Prompt
	default:
		if len(ri.Messages) == 0 {
			return Item{}, fmt.Errorf("item %q: \"messages\" is empty; give at least one message", id)
		}
		for i, m := range ri.Messages {
			switch m.Role {
			case "system", "user", "assistant":
			default:
				return Item{}, fmt.Errorf("item %q: messages[%d] has role %q; want system, user or assistant", id, i, m.Role)
			}
		}
		it.Messages = ri.Messages
	}
	if ri.Reference != nil {
		it.Reference = *ri.Reference
	}
	if it.Contains, err = parseContains(id, ri.Contains); err != nil {
		return Item{}, err
	}
	if ri.Regex != nil {
		re, err := regexp.Compile(*ri.Regex)
		if err != nil {
			return Item{}, fmt.Errorf("item %q: \"regex\" does not compile (Go RE2 syntax): %w", id, err)
		}
		it.Regex, it.re = *ri.Regex, re
	}
	if ri.JSON != nil {
		it.JSON = *ri.JSON
	}
	if ri.MaxTokens != nil {
		if *ri.MaxTokens < 1 {
			return Item{}, fmt.Errorf("item %q: \"max_tokens\" is %d; want a positive number", id, *ri.MaxTokens)
		}
		it.MaxTokens = *ri.MaxTokens
	}
	return it, nil
}

// parseContains reads "contains": a list of strings, or one string as a list of one.
func parseContains(id string, raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return nil, fmt.Errorf("item %q: \"contains\" is %s; want a list of strings", id, shorten(string(raw)))
		}
		list = []string{one}
	}
	for i, c := range list {
		if c == "" {
			return nil, fmt.Errorf("item %q: contains[%d] is empty", id, i)
		}
	}
	return list, nil
}

func parseID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("missing \"id\"; every item needs a unique id (a string or a number)")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return "", errors.New("\"id\" is empty")
		}
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("\"id\" is %s; want a string or a number", raw)
}

// describeJSONError turns a decoding error into a message that says what was wrong.
func describeJSONError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("not valid JSON at byte %d: %w", se.Offset, err)
	case errors.As(err, &te):
		if te.Field == "" {
			return fmt.Errorf("want a JSON object, got a %s", te.Value)
		}
		return fmt.Errorf("field %q is a %s; want %s", te.Field, te.Value, jsonKind(te.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for unknown fields.
		return fmt.Errorf("%s; known fields are %s", strings.TrimPrefix(err.Error(), "json: "), knownFields)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("truncated JSON object: %w", err)
	}
	return err
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice":
		return "a list"
	case "bool":
		return "true or false"
	case "int":
		return "a whole number"
	case "struct":
		return "an object"
	}
	return goKind
}
