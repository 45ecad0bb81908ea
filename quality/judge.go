package quality

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/ollama/ollama/api"
)

// DefaultJudgeURL is the Ollama server a judge is asked when the plan names none.
const DefaultJudgeURL = "http://127.0.0.1:11434"

// DefaultJudgeRubric is the rubric a judge applies when the plan gives none.
const DefaultJudgeRubric = "The answer is correct, complete, and follows every instruction of the question."

// JudgeScale is the top of the scale a judge rates on (1 to JudgeScale).
const JudgeScale = 5

// Verdict errors: an item whose verdict cannot be used is not scored.
var (
	// ErrVerdictUnparseable says a judge's reply holds no score.
	ErrVerdictUnparseable = errors.New("no score in the judge's reply")
	// ErrVerdictOutOfRange says a judge's score is outside its scale.
	ErrVerdictOutOfRange = errors.New("the judge's score is out of range")
)

// Judge rates answers with an LLM through Ollama's API: temperature 0, GenerationSeed, a
// rubric, and a parse of the verdict that accepts the usual ways models write a score.
type Judge struct {
	client *api.Client
	model  string
	rubric string
}

// NewJudge returns a judge that asks model on the Ollama server at baseURL ("" means
// DefaultJudgeURL) to apply rubric ("" means DefaultJudgeRubric).
func NewJudge(baseURL, model, rubric string) (*Judge, error) {
	if model == "" {
		return nil, errors.New("judge: no judge model; set judge_model in the quality block")
	}
	if baseURL == "" {
		baseURL = DefaultJudgeURL
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("judge: judge_url %q is not an absolute URL such as %s", baseURL, DefaultJudgeURL)
	}
	if rubric == "" {
		rubric = DefaultJudgeRubric
	}
	return &Judge{client: api.NewClient(u, &http.Client{}), model: model, rubric: rubric}, nil
}

// Rate returns the judge's score of answer to item, on 0..1. A verdict that cannot be parsed
// or is out of range is an error wrapping ErrVerdictUnparseable or ErrVerdictOutOfRange.
func (j *Judge) Rate(ctx context.Context, item Item, answer string) (float64, error) {
	stream := false
	req := &api.ChatRequest{
		Model:    j.model,
		Messages: j.messages(item, answer),
		Stream:   &stream,
		Options:  map[string]any{"temperature": 0, "seed": GenerationSeed},
	}
	var reply strings.Builder
	err := j.client.Chat(ctx, req, func(r api.ChatResponse) error {
		reply.WriteString(r.Message.Content)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("judge %s: %w", j.model, err)
	}
	score, err := ParseVerdict(reply.String())
	if err != nil {
		return 0, fmt.Errorf("judge %s: %w", j.model, err)
	}
	return score, nil
}

func (j *Judge) messages(item Item, answer string) []api.Message {
	system := fmt.Sprintf("You grade answers. Rubric: %s\n"+
		"Rate the answer from 1 (does not meet the rubric at all) to %d (fully meets it). "+
		"You may reason briefly; end your reply with a last line of the form \"Score: N/%d\".",
		j.rubric, JudgeScale, JudgeScale)
	var user strings.Builder
	fmt.Fprintf(&user, "Question:\n%s\n\n", item.Text())
	if item.Reference != "" {
		fmt.Fprintf(&user, "Reference answer:\n%s\n\n", item.Reference)
	}
	fmt.Fprintf(&user, "Answer to grade:\n%s\n", answer)
	return []api.Message{{Role: "system", Content: system}, {Role: "user", Content: user.String()}}
}

const number = `([0-9]+(?:\.[0-9]+)?|\.[0-9]+)`

var (
	// keywordScore finds "Score: 4/5", "rating = 0.8", "score: 4 out of 5", "Score: **4**",
	// "score 80%".
	keywordScore = regexp.MustCompile(`(?i)\b(?:score|rating|grade|verdict)\b["'*]*\s*[:=]?[\s*]*` + number +
		`\**\s*(%|\s*(?:/|out\s+of)\s*` + number + `)?`)
	// bareScore is a reply that is only a score: "4", "0.8", "4/5", "80%".
	bareScore = regexp.MustCompile(`^\**\s*` + number + `\s*(%|\s*(?:/|out\s+of)\s*` + number + `)?\s*\**\.?$`)
	// jsonObject finds flat JSON objects in a reply.
	jsonObject = regexp.MustCompile(`\{[^{}]*\}`)
)

// ParseVerdict reads a judge's score from its reply and returns it on 0..1. In order, it
// takes: a JSON object with a "score" (or "rating") number; the last "Score: N/D" (also
// "rating", "grade", "N out of D", "N%"); or a reply that is only a number or fraction.
// A fraction N/D gives N/D; a percentage N/100; a number with a decimal point in 0..1 is
// taken as is; a whole number is on the 1..JudgeScale scale and gives N/JudgeScale.
func ParseVerdict(reply string) (float64, error) {
	for _, obj := range jsonObject.FindAllString(reply, -1) {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(obj), &m) != nil {
			continue
		}
		for _, key := range []string{"score", "rating"} {
			raw, ok := m[key]
			if !ok {
				continue
			}
			var n json.Number
			if err := json.Unmarshal(raw, &n); err != nil {
				var s string
				if json.Unmarshal(raw, &s) != nil {
					return 0, fmt.Errorf("%w: %q is %s, not a number", ErrVerdictUnparseable, key, raw)
				}
				return ParseVerdict(s)
			}
			return normalizeVerdict(n.String(), "", "")
		}
	}
	if ms := keywordScore.FindAllStringSubmatch(reply, -1); len(ms) > 0 {
		m := ms[len(ms)-1]
		return normalizeVerdict(m[1], m[2], m[3])
	}
	if m := bareScore.FindStringSubmatch(strings.TrimSpace(reply)); m != nil {
		return normalizeVerdict(m[1], m[2], m[3])
	}
	return 0, fmt.Errorf("%w: %q", ErrVerdictUnparseable, shorten(reply))
}

// normalizeVerdict maps a number, with its suffix ("%" or a denominator), to 0..1.
func normalizeVerdict(num, suffix, denom string) (float64, error) {
	x, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a number", ErrVerdictUnparseable, num)
	}
	if x < 0 {
		return 0, fmt.Errorf("%w: %s is negative", ErrVerdictOutOfRange, num)
	}
	var v float64
	switch {
	case denom != "":
		d, err := strconv.ParseFloat(denom, 64)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%w: %s/%s has no positive denominator", ErrVerdictOutOfRange, num, denom)
		}
		if x > d {
			return 0, fmt.Errorf("%w: %s/%s is above the top of its scale", ErrVerdictOutOfRange, num, denom)
		}
		v = x / d
	case suffix == "%":
		if x > 100 {
			return 0, fmt.Errorf("%w: %s%% is above 100%%", ErrVerdictOutOfRange, num)
		}
		v = x / 100
	case strings.Contains(num, ".") || x < 1:
		if x > 1 {
			return 0, fmt.Errorf("%w: %s is neither a fraction in 0..1 nor a whole number from 1 to %d", ErrVerdictOutOfRange, num, JudgeScale)
		}
		v = x
	default:
		if x > JudgeScale {
			return 0, fmt.Errorf("%w: %s is above the top of the 1..%d scale", ErrVerdictOutOfRange, num, JudgeScale)
		}
		v = x / JudgeScale
	}
	return v, nil
}

func shorten(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > 120 {
		return string(r[:120]) + "..."
	}
	return s
}
