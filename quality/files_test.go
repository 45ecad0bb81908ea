package quality

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/plan"
)

// writeFiles writes name → content into a fresh folder and returns the folder.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadLines(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"plain.txt": "\xef\xbb\xbfone\r\n\ntwo\n",
		"refs.jsonl": `{"text": "a", "contains": "x"}` + "\n\n" +
			`{"id": 7, "reference": "b", "contains": ["y", "z"], "regex": "^b$", "json": true}` + "\n" +
			`{"id": "q3", "text": "c"}` + "\n",
		"bad.jsonl":      `{"text": "a"}` + "\n" + `{"reference_text": "b"}` + "\n",
		"contains.jsonl": `{"text": "a", "contains": 3}` + "\n",
		"empty.txt":      "",
	})
	path := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name    string
		file    string
		want    []Line
		wantErr string
	}{
		{
			name: "plain text: one text a line, a byte order mark and CRs dropped, blank lines kept",
			file: "plain.txt",
			want: []Line{
				{ID: "1", Source: path("plain.txt") + ":1", Text: "one"},
				{ID: "2", Source: path("plain.txt") + ":2", Text: ""},
				{ID: "3", Source: path("plain.txt") + ":3", Text: "two"},
			},
		},
		{
			name: "JSONL: ids, references, contains as one string or a list, blank lines skipped",
			file: "refs.jsonl",
			want: []Line{
				{ID: "1", Source: path("refs.jsonl") + ":1", Text: "a", Contains: []string{"x"}},
				{ID: "7", Source: path("refs.jsonl") + ":3", Text: "b", Contains: []string{"y", "z"}, Regex: "^b$", JSON: true},
				{ID: "q3", Source: path("refs.jsonl") + ":4", Text: "c"},
			},
		},
		{name: "a line without text", file: "bad.jsonl", wantErr: "bad.jsonl:2: no \"text\" field"},
		{name: "contains of the wrong type", file: "contains.jsonl", wantErr: "contains.jsonl:1: \"contains\" is 3; want a list of strings"},
		{name: "an empty file", file: "empty.txt", wantErr: "empty.txt: no lines"},
		{name: "a missing file", file: "missing.txt", wantErr: "missing.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadLines(context.Background(), path(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScoreFiles(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"refs.txt":    "Paris\nBerlin\n",
		"cands.txt":   "Paris\nMadrid\n",
		"three.txt":   "a\nb\nc\n",
		"json.jsonl":  `{"text": "{\"a\": 1}"}` + "\n" + `{"text": "not json"}` + "\n",
		"needs.jsonl": `{"text": "Paris is the capital", "contains": ["Paris"]}` + "\n" + `{"text": "Bonn", "contains": ["berlin"]}` + "\n",
	})
	path := func(name string) string {
		if name == "" {
			return ""
		}
		return filepath.Join(dir, name)
	}
	tests := []struct {
		name        string
		scorer      string
		refs, cands string
		wantItems   []float64
		wantScore   float64
		wantErr     string
	}{
		{name: "exact, line by line", scorer: ScorerExact, refs: "refs.txt", cands: "cands.txt", wantItems: []float64{1, 0}, wantScore: 0.5},
		{name: "json_valid needs no references", scorer: ScorerJSONValid, cands: "json.jsonl", wantItems: []float64{1, 0}, wantScore: 0.5},
		{name: "contains reads the references' lists", scorer: ScorerContains, refs: "needs.jsonl", cands: "cands.txt", wantItems: []float64{1, 0}, wantScore: 0.5},
		{name: "one candidate a reference", scorer: ScorerExact, refs: "refs.txt", cands: "three.txt", wantErr: "3 candidates in " + path("three.txt") + " for 2 references in " + path("refs.txt")},
		{name: "an unknown scorer", scorer: "bleu", refs: "refs.txt", cands: "cands.txt", wantErr: `unknown scorer "bleu"`},
		{name: "the judge needs questions", scorer: ScorerJudge, refs: "refs.txt", cands: "cands.txt", wantErr: "the judge needs each item's question"},
		{name: "chrf needs references", scorer: ScorerChrF, cands: "cands.txt", wantErr: "scorer chrf needs a references file"},
		{name: "contains without lists", scorer: ScorerContains, refs: "refs.txt", cands: "cands.txt", wantErr: `has no "contains" list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := ScoreFiles(context.Background(), tt.scorer, path(tt.refs), path(tt.cands))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantItems, o.Items); diff != "" || o.Score != tt.wantScore {
				t.Errorf("score %v, want %v; items (-want +got):\n%s", o.Score, tt.wantScore, diff)
			}
		})
	}
}

// answers stands in for a served model: it answers each item with a fixed text, by id.
type answers map[string]string

func (a answers) Generate(_ context.Context, it Item) (string, error) { return a[it.ID], nil }
func (answers) Simulated() bool                                       { return false }

func TestRunGate(t *testing.T) {
	t.Parallel()
	items := mustItems(t, `{"id":"a","prompt":"p","reference":"yes"}`+"\n"+`{"id":"b","prompt":"p","reference":"no"}`+"\n")
	half, tenth := 0.5, 0.1
	both := answers{"a": "yes", "b": "no"}
	one := answers{"a": "yes", "b": "maybe"}
	tests := []struct {
		name           string
		gate           plan.QualityGate
		gen, baseline  Generator
		wantPassed     *bool
		wantBaseline   *float64
		wantReasonPart string
	}{
		{name: "no gate", gate: plan.QualityGate{Name: "q", Scorer: ScorerExact}, gen: one},
		{name: "min met", gate: plan.QualityGate{Name: "q", Scorer: ScorerExact, Min: &half}, gen: one, wantPassed: ref(true)},
		{
			name: "max drop against the baseline", gate: plan.QualityGate{Name: "q", Scorer: ScorerExact, MaxDrop: &tenth},
			gen: one, baseline: both, wantPassed: ref(false), wantBaseline: ref(1.0), wantReasonPart: "below the baseline's",
		},
		{
			name: "max drop without a baseline checks nothing", gate: plan.QualityGate{Name: "q", Scorer: ScorerExact, MaxDrop: &tenth},
			gen: one, wantPassed: ref(true),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := RunGate(context.Background(), tt.gate, items, tt.gen, tt.baseline)
			if err != nil {
				t.Fatal(err)
			}
			if res.Score != 0.5 || res.Scorer != ScorerExact {
				t.Errorf("%s %v, want exact 0.5", res.Scorer, res.Score)
			}
			if diff := cmp.Diff(tt.wantPassed, res.Passed); diff != "" {
				t.Errorf("passed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantBaseline, res.Baseline); diff != "" {
				t.Errorf("baseline (-want +got):\n%s", diff)
			}
			if !strings.Contains(res.Reason, tt.wantReasonPart) {
				t.Errorf("reason %q, want one with %q", res.Reason, tt.wantReasonPart)
			}
		})
	}
}

func ref[T any](v T) *T { return &v }

func TestLoadGateSets(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"set.jsonl":   `{"id":"q1","prompt":"p","reference":"r"}` + "\n",
		"noref.jsonl": `{"id":"q1","prompt":"p"}` + "\n",
	})
	good := plan.QualityGate{Name: "good", Scorer: ScorerExact, Dataset: filepath.Join(dir, "set.jsonl")}
	sets, err := LoadGateSets([]plan.QualityGate{good, good}, false)
	if err != nil || len(sets) != 2 || len(sets[1]) != 1 {
		t.Fatalf("LoadGateSets = %v, %v; want two sets of one item", sets, err)
	}
	for name, tt := range map[string]struct {
		gate         plan.QualityGate
		withBaseline bool
		want         string
	}{
		"baseline_agreement without a baseline": {plan.QualityGate{Name: "agree", Scorer: ScorerBaselineAgreement, Dataset: good.Dataset}, false, `quality "agree" uses baseline_agreement, which needs --baseline-url`},
		"a set without what the scorer needs":   {plan.QualityGate{Name: "noref", Scorer: ScorerChrF, Dataset: filepath.Join(dir, "noref.jsonl")}, true, `quality "noref": `},
		"a missing set":                         {plan.QualityGate{Name: "gone", Scorer: ScorerExact, Dataset: filepath.Join(dir, "gone.jsonl")}, true, `quality "gone": `},
	} {
		if _, err := LoadGateSets([]plan.QualityGate{good, tt.gate}, tt.withBaseline); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tt.want)
		}
	}
}

// TestReadLinesNamesALineOverTheLimit checks that a line longer than the 16 MiB a line may hold
// is refused with the file, the line and the limit, not with the scanner's "token too long".
func TestReadLinesNamesALineOverTheLimit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "refs.txt")
	if err := os.WriteFile(path, []byte("short\n"+strings.Repeat("x", 16<<20+1)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadLines(context.Background(), path)
	if err == nil || strings.Contains(err.Error(), "token too long") || !strings.Contains(err.Error(), path+":2: the line is longer than 16 MiB") {
		t.Errorf("ReadLines = %v, want %s:2 named as a line longer than 16 MiB", err, path)
	}
}
