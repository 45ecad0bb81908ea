package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/frontier-llm/frontier/workload"
)

// hash identifies the plan's source bytes and resolved variables, by name.
func (p *Plan) hash(vars map[string]string) string {
	h := sha256.New()
	h.Write(p.src)
	h.Write([]byte{0})
	for _, n := range slices.Sorted(maps.Keys(vars)) {
		h.Write([]byte(n + "=" + vars[n] + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// spaceHash identifies what makes the trials of two studies comparable, from decoded values
// and normalised expression text, so comments and layout do not change it.
func (p *Plan) spaceHash() string {
	type knob struct {
		Name   string   `json:"name"`
		Kind   KnobKind `json:"kind"`
		Values []string `json:"values,omitempty"`
		Min    float64  `json:"min"`
		Max    float64  `json:"max"`
		Step   float64  `json:"step"`
		Log    bool     `json:"log"`
	}
	type cond struct {
		Name string `json:"name"`
		Expr string `json:"expr"`
	}
	type gate struct {
		Name     string            `json:"name"`
		Dataset  string            `json:"dataset"`
		Scorer   string            `json:"scorer"`
		Baseline map[string]string `json:"baseline"`
		MaxDrop  *float64          `json:"max_drop"`
		Min      *float64          `json:"min"`
		Judge    []string          `json:"judge"`
		Samples  int               `json:"samples"`
	}
	space := struct {
		Knobs        []knob           `json:"knobs"`
		Rules        []cond           `json:"rules"`
		Workloads    []workload.Class `json:"workloads"`
		Quality      []gate           `json:"quality"`
		Model        string           `json:"model"`
		Architecture string           `json:"architecture"`
		MaxModelLen  int              `json:"max_model_len"`
		Engine       string           `json:"engine"`
		SKU          string           `json:"sku"`
	}{
		Model:        p.Model.Name,
		Architecture: p.Model.Architecture,
		MaxModelLen:  p.Model.MaxModelLen,
		Engine:       p.Engine.Kind,
		SKU:          p.Hardware.SKU,
	}
	for _, k := range p.Knobs {
		hk := knob{Name: k.Name, Kind: k.Kind, Min: k.Min, Max: k.Max, Step: k.Step, Log: k.Log}
		for _, v := range k.Values {
			hk.Values = append(hk.Values, formatValue(v))
		}
		space.Knobs = append(space.Knobs, hk)
	}
	for _, r := range p.Rules {
		space.Rules = append(space.Rules, cond{Name: r.Name, Expr: p.exprText(r.Condition)})
	}
	for _, c := range p.Workloads {
		c.Dataset = p.relative(c.Dataset)
		c.Arrival.TraceFile = p.relative(c.Arrival.TraceFile)
		space.Workloads = append(space.Workloads, c)
	}
	for _, q := range p.Quality {
		g := gate{Name: q.Name, Dataset: p.relative(q.Dataset), Scorer: q.Scorer, MaxDrop: q.MaxDrop, Min: q.Min,
			Judge: []string{q.JudgeModel, q.JudgeRubric}, Samples: q.Samples, Baseline: map[string]string{}}
		for k, v := range q.Baseline {
			g.Baseline[k] = formatValue(v)
		}
		space.Quality = append(space.Quality, g)
	}
	b, err := json.Marshal(space)
	if err != nil {
		// Every field is a plain value; Marshal cannot fail.
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// relative returns path relative to the plan's folder, so that moving a plan with its files
// keeps its hash.
func (p *Plan) relative(path string) string {
	if path == "" {
		return ""
	}
	if rel, err := filepath.Rel(p.Dir, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}

// exprText returns the source text of an expression of the plan file with comments and
// layout normalised: its tokens separated by single spaces.
func (p *Plan) exprText(expr hcl.Expression) string {
	if expr == nil {
		return ""
	}
	rng := expr.Range()
	if rng.Start.Byte < 0 || rng.End.Byte > len(p.src) || rng.Start.Byte > rng.End.Byte {
		return ""
	}
	raw := p.src[rng.Start.Byte:rng.End.Byte]
	toks, diags := hclsyntax.LexExpression(raw, rng.Filename, rng.Start)
	if diags.HasErrors() {
		return strings.Join(strings.Fields(string(raw)), " ")
	}
	var parts []string
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenComment, hclsyntax.TokenNewline, hclsyntax.TokenEOF:
			continue
		}
		parts = append(parts, string(t.Bytes))
	}
	return strings.Join(parts, " ")
}

// ExprText returns the source text of a rule's, check's or objective's expression on one
// line, for display.
func (p *Plan) ExprText(expr hcl.Expression) string {
	if expr == nil {
		return ""
	}
	rng := expr.Range()
	if rng.Start.Byte < 0 || rng.End.Byte > len(p.src) || rng.Start.Byte > rng.End.Byte {
		return ""
	}
	return strings.Join(strings.Fields(string(p.src[rng.Start.Byte:rng.End.Byte])), " ")
}

// WorkloadSeed is the seed of the plan's synthetic requests: the study block's
// workload_seed, else one derived from the workloads themselves, so that it does not follow
// the sampler's seed and every study of the plan measures the same requests.
func (p *Plan) WorkloadSeed() int64 {
	if p.Study.HasWorkloadSeed {
		return p.Study.WorkloadSeed
	}
	js, err := json.Marshal(p.Workloads)
	if err != nil {
		return 0
	}
	sum := sha256.Sum256(js)
	var v uint64
	for _, b := range sum[:8] {
		v = v<<8 | uint64(b)
	}
	return int64(v >> 1) // non-negative
}
