package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"

	"github.com/frontier-llm/frontier/record"
)

// JSONReport is the JSON of `frontier report --format json`: the study record as stored, with
// the recommended configuration added.
type JSONReport struct {
	*record.Study
	Recommended *Recommendation `json:"recommended"`
	// TieGroups partitions the front into configurations that tie within noise.
	TieGroups [][]int `json:"tie_groups,omitempty"`
}

// WriteJSON writes a study as JSON: the record's own keys (study, trials, front, ...) and
// recommended. Secret-looking values in provenance and token-shaped strings in messages are
// redacted on the way out.
func WriteJSON(w io.Writer, a *Analysis) error {
	out := JSONReport{Study: sanitized(a.Record), Recommended: a.Recommended, TieGroups: a.TieGroups}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write JSON report: %w", err)
	}
	return nil
}

// sanitized returns a copy of rec in which nothing secret-looking remains: provenance
// environments and commands redacted, tokens scrubbed from reasons, messages and outputs.
func sanitized(rec *record.Study) *record.Study {
	c := *rec
	c.EngineArgs = redactArgv(rec.EngineArgs)
	c.EngineEnv = redactEnv(rec.EngineEnv)
	c.Trials = make([]record.Trial, len(rec.Trials))
	for i, t := range rec.Trials {
		t.Reason = scrub(t.Reason)
		t.EngineMessage = scrub(t.EngineMessage)
		if t.Provenance != nil {
			p := *t.Provenance
			p.Launch.Command = redactArgv(p.Launch.Command)
			p.Launch.Env = redactEnv(p.Launch.Env)
			t.Provenance = &p
		}
		if t.Quality != nil {
			q := maps.Clone(t.Quality)
			for name, s := range q {
				s.Reason = scrub(s.Reason)
				if s.Examples != nil {
					ex := make([]record.QualityExample, len(s.Examples))
					for j, e := range s.Examples {
						ex[j] = record.QualityExample{ID: scrub(e.ID), Input: scrub(e.Input), Reference: scrub(e.Reference), Output: scrub(e.Output),
							Score: e.Score, BaselineOutput: scrub(e.BaselineOutput)}
					}
					s.Examples = ex
				}
				q[name] = s
			}
			t.Quality = q
		}
		c.Trials[i] = t
	}
	return &c
}

func redactEnv(env map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if isSecretName(k) {
			v = redacted
		}
		out[k] = scrub(v)
	}
	return out
}
