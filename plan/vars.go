package plan

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// EnvVarPrefix is the prefix of environment variables that set plan variables:
// FRONTIER_VAR_model=... sets var.model.
const EnvVarPrefix = "FRONTIER_VAR_"

// variable is a declared variable block.
type variable struct {
	name        string
	description string
	typ         cty.Type // cty.DynamicPseudoType when the block gives no type
	def         cty.Value
	hasDefault  bool
	badDefault  bool // the default has its own diagnostic
	sensitive   bool // its value is not shown
	decl        hcl.Range
}

func variableSchema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "default"}, {Name: "type"}, {Name: "description"}, {Name: "sensitive"},
	}}
}

func decodeVariableBlock(b *hcl.Block, fns evalFuncs) (*variable, hcl.Diagnostics) {
	v := &variable{name: b.Labels[0], typ: cty.DynamicPseudoType, decl: b.DefRange}
	content, diags := b.Body.Content(variableSchema())
	if !hclsyntax.ValidIdentifier(v.name) {
		diags = diags.Append(errorAt(b.LabelRanges[0], "Invalid variable name",
			"A variable name must start with a letter and contain only letters, digits, underscores and dashes; %q does not.", v.name))
	}
	if a, ok := content.Attributes["type"]; ok {
		t, ds := typeexpr.TypeConstraint(a.Expr)
		diags = diags.Extend(ds)
		if !ds.HasErrors() {
			v.typ = t
		}
	}
	if a, ok := content.Attributes["description"]; ok {
		d, ds := a.Expr.Value(nil)
		diags = diags.Extend(ds)
		if !ds.HasErrors() && d.Type() == cty.String && !d.IsNull() {
			v.description = d.AsString()
		}
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		s, ds := a.Expr.Value(nil)
		diags = diags.Extend(ds)
		if !ds.HasErrors() {
			if s.Type() != cty.Bool || s.IsNull() {
				diags = diags.Append(errorAt(a.Expr.Range(), "Wrong type", "The attribute sensitive of variable %q must be true or false.", v.name))
			} else {
				v.sensitive = s.True()
			}
		}
	}
	if a, ok := content.Attributes["default"]; ok {
		d, ds := a.Expr.Value(&hcl.EvalContext{Functions: fns})
		diags = diags.Extend(ds)
		v.badDefault = ds.HasErrors()
		if !ds.HasErrors() {
			c, err := convert.Convert(d, v.typ)
			if err != nil {
				v.badDefault = true
				diags = diags.Append(errorAt(a.Expr.Range(), "Invalid default value for variable",
					"The default of variable %q does not match its type: %s.", v.name, err))
			} else {
				v.def, v.hasDefault = c, true
			}
		}
	}
	return v, diags
}

// resolveVariables gives each declared variable its value, lowest precedence first: its
// default, FRONTIER_VAR_<name>, the -var-file files in order, the -var flags in order.
func resolveVariables(vars []*variable, opts LoadOptions, parser *hclparse.Parser, fns evalFuncs) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	byName := map[string]*variable{}
	vals := map[string]cty.Value{}
	for _, v := range vars {
		byName[v.name] = v
		if v.hasDefault {
			vals[v.name] = v.def
		}
	}
	failed := map[string]bool{} // variables whose value from some source was wrong
	set := func(v *variable, val cty.Value, rng *hcl.Range, source string) {
		c, err := convertValue(val, v.typ)
		if err != nil {
			failed[v.name] = true
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid value for variable",
				Detail:   fmt.Sprintf("The value of variable %q from %s does not match its type %s: %s.", v.name, source, v.typ.FriendlyName(), err),
				Subject:  rng,
			})
			return
		}
		vals[v.name] = c
	}
	for _, kv := range opts.Environ {
		name, raw, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvVarPrefix) {
			continue
		}
		v, declared := byName[strings.TrimPrefix(name, EnvVarPrefix)]
		if !declared {
			continue // like Terraform: the environment may hold variables of other plans
		}
		val, ds := rawValue(v, raw, "the environment variable "+name)
		diags = diags.Extend(ds)
		failed[v.name] = failed[v.name] || ds.HasErrors()
		if !ds.HasErrors() {
			set(v, val, nil, "the environment variable "+name)
		}
	}
	for _, file := range opts.VarFiles {
		src, ds := readSource(file, "variable file", MaxVarFileBytes)
		diags = diags.Extend(ds)
		if ds.HasErrors() {
			continue
		}
		parse := parser.ParseHCL
		if strings.EqualFold(filepath.Ext(file), ".json") {
			parse = parser.ParseJSON // {"name": value, ...}, as HCL's JSON syntax reads it
		}
		f, ds := parse(src, file)
		diags = diags.Extend(ds)
		if ds.HasErrors() || f == nil {
			continue
		}
		attrs, ds := f.Body.JustAttributes()
		diags = diags.Extend(ds)
		for _, a := range sortedAttributes(attrs) {
			v, declared := byName[a.Name]
			if !declared {
				diags = diags.Append(warningAt(a.NameRange, "Value for undeclared variable",
					"The file %s sets %q, but the plan declares no variable of that name; the value is ignored.", file, a.Name))
				continue
			}
			val, ds := a.Expr.Value(&hcl.EvalContext{Functions: fns})
			diags = diags.Extend(ds)
			failed[v.name] = failed[v.name] || ds.HasErrors()
			if !ds.HasErrors() {
				set(v, val, a.Expr.Range().Ptr(), file)
			}
		}
	}
	for _, kv := range opts.Vars {
		name, raw, ok := strings.Cut(kv, "=")
		if !ok {
			diags = diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -var option",
				Detail: fmt.Sprintf("The option -var %q is not of the form NAME=VALUE.", kv)})
			continue
		}
		v, declared := byName[name]
		if !declared {
			diags = diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable",
				Detail: fmt.Sprintf("The option -var %q sets a variable that the plan does not declare; declare it with a variable %q block.", kv, name)})
			continue
		}
		val, ds := rawValue(v, raw, "-var "+name)
		diags = diags.Extend(ds)
		failed[v.name] = failed[v.name] || ds.HasErrors()
		if !ds.HasErrors() {
			set(v, val, nil, "-var "+name)
		}
	}
	for _, v := range vars {
		if _, ok := vals[v.name]; !ok && (v.badDefault || failed[v.name]) {
			vals[v.name] = cty.UnknownVal(v.typ)
		} else if !ok {
			diags = diags.Append(errorAt(v.decl, "No value for required variable",
				"Variable %q has no default; set it with -var %s=VALUE, a -var-file or the environment variable %s%s.", v.name, v.name, EnvVarPrefix, v.name))
			vals[v.name] = cty.UnknownVal(v.typ) // so that its uses do not each report it again
		}
	}
	return vals, diags
}

// rawValue reads a value given as text (-var, environment). As in Terraform, it is a string
// unless the variable's type is something else, in which case it is parsed as an HCL
// expression.
func rawValue(v *variable, raw, source string) (cty.Value, hcl.Diagnostics) {
	if v.typ == cty.DynamicPseudoType || v.typ == cty.String {
		return cty.StringVal(raw), nil
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), source, hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	return expr.Value(nil)
}

func sortedAttributes(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := out[i].Range, out[j].Range
		if ri.Filename != rj.Filename {
			return ri.Filename < rj.Filename
		}
		return ri.Start.Byte < rj.Start.Byte
	})
	return out
}

// renderValue prints a value as JSON, for display and hashing.
func renderValue(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return v.GoString()
	}
	return string(b)
}
