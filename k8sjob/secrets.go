package k8sjob

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/frontier-llm/frontier/plan"
)

// text is one string the manifests hold, as Kubernetes or the plan reads it, and where.
type text struct {
	where string
	s     string
}

// checkSecrets refuses manifests that would hold the value of a secret: in any string of
// docs as Kubernetes reads it (no YAML escape, no $$ of expansion in the way), in the
// comments at the top, and in each file of the ConfigMap both as its bytes and as the plan
// reads it (the strings of an HCL or JSON file, or of each line of a JSON Lines file, with
// their escapes undone: "\u0073ecret" in a JSON variable file is "secret").
func (m *manifests) checkSecrets(docs []mapping) error {
	// A variable file that sets a sensitive variable holds its value, however short.
	for _, f := range m.files {
		if f.what != "-var-file" {
			continue
		}
		for _, name := range setVariables(f) {
			if m.p.Variables[name] == plan.SensitiveValue {
				return fmt.Errorf("-var-file %s sets the sensitive variable %q, and the file would be copied into the ConfigMap %s-plan: leave it out of the file and put it in the Secret the comments name, as %s%s", f.from, name, m.name, plan.EnvVarPrefix, name)
			}
		}
	}
	secrets := m.secrets()
	if len(secrets) == 0 {
		return nil
	}
	// The files first, so that a value in one is named by its file.
	var texts []text
	for _, f := range m.files {
		where := fmt.Sprintf("%s (%s), copied into the ConfigMap %s-plan", f.from, f.what, m.name)
		texts = append(texts, text{where, string(f.data)})
		for _, s := range fileStrings(f) {
			texts = append(texts, text{where, s})
		}
	}
	for _, d := range docs {
		kind, name := "", ""
		for _, f := range d {
			switch f.key {
			case "kind":
				kind, _ = f.val.(string)
			case "metadata":
				for _, mf := range f.val.(mapping) {
					if mf.key == "name" {
						name, _ = mf.val.(string)
					}
				}
			}
		}
		texts = collectStrings(texts, kind+" "+name, d)
	}
	for i, l := range m.headerText {
		texts = append(texts, text{fmt.Sprintf("the comments at the top, line %d", i+1), l})
	}
	for _, t := range texts {
		for _, v := range secrets {
			if strings.Contains(t.s, v) {
				return fmt.Errorf("the value of a secret would be written into the manifests, in %s: it is in the plan, one of its files or a -var flag; pass it through the environment and the plan's secret_env, or a sensitive variable set from the Secret the comments name (FRONTIER_VAR_<name>), and keep it out of the files beside the plan", t.where)
			}
		}
	}
	return nil
}

// collectStrings appends every string of v (keys, scalars, binaryData as its bytes) to texts, each
// with its path below where.
func collectStrings(texts []text, where string, v any) []text {
	switch x := v.(type) {
	case mapping:
		for _, f := range x {
			texts = append(texts, text{where, f.key})
			texts = collectStrings(texts, where+"."+f.key, f.val)
		}
	case seq:
		for i, it := range x {
			texts = collectStrings(texts, fmt.Sprintf("%s[%d]", where, i), it)
		}
	case string:
		texts = append(texts, text{where, x})
	case expand:
		texts = append(texts, text{where, string(x)})
	case varRef:
		texts = append(texts, text{where, string(x)})
	case binary:
		texts = append(texts, text{where, string(x)})
	}
	return texts
}

// fileStrings are the strings of a file of the ConfigMap as the plan reads it: of the plan and
// an HCL variable file, every literal string, heredoc and block label; of a JSON file (a .json
// variable file, a model's config.json), every key and string; of a JSON Lines file (a
// dataset, an evaluation set, a trace), those of each line. A file that does not parse gives
// none (its bytes are checked as they are).
func fileStrings(f file) []string {
	ext := strings.ToLower(path.Ext(f.rel))
	switch {
	case f.what == "the plan" || (f.what == "-var-file" && ext != ".json"):
		return hclStrings(f.data)
	case ext == ".json":
		return jsonStrings(f.data)
	case ext == ".jsonl":
		var out []string
		sc := bufio.NewScanner(bytes.NewReader(f.data))
		sc.Buffer(nil, len(f.data)+1)
		for sc.Scan() {
			out = append(out, jsonStrings(sc.Bytes())...)
		}
		return out
	}
	return nil
}

// setVariables are the names a variable file sets, read as the plan reads it (JSON for a
// .json file, HCL otherwise); none when it does not parse.
func setVariables(f file) []string {
	parser := hclparse.NewParser()
	parse := parser.ParseHCL
	if strings.EqualFold(path.Ext(f.rel), ".json") {
		parse = parser.ParseJSON
	}
	hf, diags := parse(f.data, f.from)
	if diags.HasErrors() || hf == nil {
		return nil
	}
	attrs, _ := hf.Body.JustAttributes()
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func hclStrings(src []byte) []string {
	file, diags := hclsyntax.ParseConfig(src, "", hcl.InitialPos)
	if diags.HasErrors() || file == nil {
		return nil
	}
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var out []string
	_ = hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		switch x := n.(type) {
		case *hclsyntax.LiteralValueExpr:
			if x.Val.IsKnown() && !x.Val.IsNull() && x.Val.Type() == cty.String {
				out = append(out, x.Val.AsString())
			}
		case *hclsyntax.TemplateExpr:
			// The literal parts together, so that a value split by an interpolation
			// ("${""}") is found too.
			var b strings.Builder
			for _, p := range x.Parts {
				if l, ok := p.(*hclsyntax.LiteralValueExpr); ok && l.Val.IsKnown() && !l.Val.IsNull() && l.Val.Type() == cty.String {
					b.WriteString(l.Val.AsString())
				}
			}
			out = append(out, b.String())
		case *hclsyntax.Block:
			out = append(out, x.Labels...)
		}
		return nil
	})
	return out
}

func jsonStrings(data []byte) []string {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
