package quality

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/frontier-llm/frontier/inputfile"
	"github.com/frontier-llm/frontier/plan"
)

// Line is one line of a references or candidates file.
type Line struct {
	// ID is the line's "id", else its position among the file's texts, from 1.
	ID string
	// Source is FILE:LINE, for messages.
	Source string
	Text   string
	// Contains, Regex and JSON are what a reference line asks of its answer.
	Contains []string
	Regex    string
	JSON     bool
}

// maxLine is the longest line ReadLines takes, in bytes.
const maxLine = 16 << 20

// ReadLines reads a file of texts: JSONL when its name ends in .jsonl (objects with "text",
// or "reference", and for references optional "id", "contains", "regex" and "json"), plain
// text otherwise, one text a line (a final newline ends the last line; it does not start
// another). A file without a line is an error. The file is read as the user's other files are
// (inputfile): a regular file of at most MaxSetBytes of UTF-8 text, a byte order mark
// skipped, the read stopped when ctx is done.
func ReadLines(ctx context.Context, path string) ([]Line, error) {
	data, err := inputfile.ReadTextContext(ctx, path, MaxSetBytes)
	if err != nil {
		return nil, err
	}
	data = inputfile.TrimBOM(data)
	jsonl := strings.EqualFold(filepath.Ext(path), ".jsonl")
	var out []Line
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSuffix(sc.Text(), "\r")
		src := fmt.Sprintf("%s:%d", path, n)
		if !jsonl {
			out = append(out, Line{ID: strconv.Itoa(n), Source: src, Text: line})
			continue
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		l, err := parseJSONLine(line, src)
		if err != nil {
			return nil, err
		}
		if l.ID == "" {
			l.ID = strconv.Itoa(len(out) + 1)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: the line is longer than %d MiB, the most one line may hold; split it or shorten it", path, n+1, maxLine>>20)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no lines", path)
	}
	return out, nil
}

// parseJSONLine reads one JSONL line of a references or candidates file; src is FILE:LINE.
func parseJSONLine(line, src string) (Line, error) {
	var obj struct {
		ID        json.RawMessage `json:"id"`
		Text      *string         `json:"text"`
		Reference *string         `json:"reference"`
		Contains  json.RawMessage `json:"contains"`
		Regex     string          `json:"regex"`
		JSON      bool            `json:"json"`
	}
	if err := json.Unmarshal([]byte(line), &obj); err != nil {
		return Line{}, fmt.Errorf("%s: %w", src, err)
	}
	l := Line{Source: src, Regex: obj.Regex, JSON: obj.JSON}
	switch {
	case obj.Text != nil:
		l.Text = *obj.Text
	case obj.Reference != nil:
		l.Text = *obj.Reference
	default:
		return Line{}, fmt.Errorf("%s: no \"text\" field", src)
	}
	if len(obj.ID) > 0 && string(obj.ID) != "null" {
		var id string
		if json.Unmarshal(obj.ID, &id) != nil {
			id = string(obj.ID) // a number
		}
		l.ID = id
	}
	if len(obj.Contains) > 0 {
		var list []string
		if json.Unmarshal(obj.Contains, &list) != nil {
			var one string
			if err := json.Unmarshal(obj.Contains, &one); err != nil {
				return Line{}, fmt.Errorf("%s: \"contains\" is %s; want a list of strings", src, obj.Contains)
			}
			list = []string{one}
		}
		l.Contains = list
	}
	return l, nil
}

// ScoreFiles scores the answers in the candidates file offline with scorer: line i of the
// candidates against line i of the references (read with ReadLines). refsPath may be empty
// for json_valid, which needs no reference. The judge needs each item's question, which
// these files do not have, so it is refused.
func ScoreFiles(ctx context.Context, scorer, refsPath, candsPath string) (*Outcome, error) {
	switch {
	case !IsScorer(scorer):
		return nil, fmt.Errorf("unknown scorer %q; one of %s", scorer, strings.Join(Scorers(), ", "))
	case scorer == ScorerJudge:
		return nil, fmt.Errorf("the judge needs each item's question; use 'frontier quality run' with a plan")
	case refsPath == "" && scorer != ScorerJSONValid:
		return nil, fmt.Errorf("scorer %s needs a references file", scorer)
	}
	cands, err := ReadLines(ctx, candsPath)
	if err != nil {
		return nil, err
	}
	items := make([]Item, len(cands))
	outputs := make([]string, len(cands))
	for i, l := range cands {
		items[i] = Item{ID: l.ID, Prompt: "-", JSON: scorer == ScorerJSONValid, Source: l.Source}
		outputs[i] = l.Text
	}
	var baseline []string
	if refsPath != "" {
		refs, err := ReadLines(ctx, refsPath)
		if err != nil {
			return nil, err
		}
		if len(refs) != len(cands) {
			return nil, fmt.Errorf("%d candidates in %s for %d references in %s; want one candidate a reference", len(cands), candsPath, len(refs), refsPath)
		}
		for i, r := range refs {
			items[i] = Item{ID: r.ID, Prompt: "-", Reference: r.Text, Contains: r.Contains, Regex: r.Regex,
				JSON: r.JSON || scorer == ScorerJSONValid, Source: r.Source}
			baseline = append(baseline, r.Text)
		}
	}
	if scorer != ScorerBaselineAgreement {
		baseline = nil
	}
	return Score(ctx, plan.QualityGate{Scorer: scorer}, items, outputs, baseline)
}
