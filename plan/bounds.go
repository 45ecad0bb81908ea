package plan

import (
	"errors"
	"fmt"
	"time"

	"github.com/frontier-llm/frontier/inputfile"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Bounds on what a plan may be, so that any file is refused or loaded in bounded time and
// memory.
const (
	// MaxPlanBytes is the largest plan file read; the examples are under 10 KiB.
	MaxPlanBytes = 1 << 20
	// MaxVarFileBytes is the largest -var-file read: room for lists of a few hundred
	// thousand values.
	MaxVarFileBytes = 8 << 20
	// MaxNesting is the deepest nesting of brackets, braces, parentheses, strings and
	// template interpolations a plan or variable file may have; HCL's parser recurses once a
	// level.
	MaxNesting = 64
	// MaxDiagnostics is how many diagnostics are printed in full; the rest are counted.
	MaxDiagnostics = 20
	// MaxThinkTime bounds a class of conversations' think_time, a person's mean pause
	// between a reply and the next turn: as long as the longest gap a trace may hold
	// (workload.MaxTraceGap). A longer one would hold a trial for days, and the offline
	// model's clock (time.Duration, 292 years) would overflow over a conversation's turns.
	MaxThinkTime = time.Hour
)

// readSource reads a plan or variable file of at most limit bytes that must be UTF-8 text,
// and checks its nesting. A UTF-8 byte order mark at the start, which editors on Windows
// write, is dropped: HCL's and JSON's parsers would refuse it. A problem is a diagnostic
// about the whole file.
func readSource(filename, what string, limit int64) ([]byte, hcl.Diagnostics) {
	src, err := inputfile.ReadText(filename, limit)
	if err != nil {
		var summary string
		switch {
		case errors.Is(err, inputfile.ErrNotRegular):
			summary = "The " + what + " is not a regular file"
		case errors.Is(err, inputfile.ErrTooLarge):
			summary = "The " + what + " is too large"
		case errors.Is(err, inputfile.ErrNotText):
			summary = "The " + what + " is not text"
		default:
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Failed to read file",
				Detail: fmt.Sprintf("%v.", err)}}
		}
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary,
			Detail: fmt.Sprintf("%v. A %s is an HCL text file of at most %s.", err, what, inputfile.Size(limit))}}
	}
	src = inputfile.TrimBOM(src)
	return src, checkNesting(src, filename)
}

// checkNesting refuses source nested deeper than MaxNesting before HCL's recursive parser
// sees it. It reads the tokens of HCL's lexer, which does not recurse.
func checkNesting(src []byte, filename string) hcl.Diagnostics {
	tokens, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	depth, unary := 0, 0
	for _, t := range tokens {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl,
			hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			depth++
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenTemplateSeqEnd, hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			depth = max(0, depth-1)
		}
		// A run of unary operators (!!!x, - - -x) nests as deep as brackets do.
		if t.Type == hclsyntax.TokenBang || t.Type == hclsyntax.TokenMinus {
			unary++
		} else {
			unary = 0
		}
		if depth+unary > MaxNesting {
			rng := t.Range
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Nested too deeply",
				Detail:  fmt.Sprintf("The expression here is nested more than %d levels deep (brackets, braces, parentheses, strings, interpolations or unary operators); frontier reads plans up to that depth.", MaxNesting),
				Subject: &rng}}
		}
	}
	return nil
}

// convertValue converts val to ty as convert.Convert does, but converts a tuple to a list or
// set one element at a time: cty unifies a tuple's element types in time quadratic in its
// length, which a -var-file list of 40,000 numbers made last 16 s.
func convertValue(val cty.Value, ty cty.Type) (cty.Value, error) {
	vt := val.Type()
	if !vt.IsTupleType() || !(ty.IsListType() || ty.IsSetType()) || ty.ElementType() == cty.DynamicPseudoType ||
		!val.IsKnown() || val.IsNull() {
		return convert.Convert(val, ty)
	}
	et := ty.ElementType()
	elems := make([]cty.Value, 0, val.LengthInt())
	for it := val.ElementIterator(); it.Next(); {
		k, e := it.Element()
		c, err := convertValue(e, et)
		if err != nil {
			return cty.NilVal, fmt.Errorf("element %s: %w", k.AsBigFloat().String(), err)
		}
		elems = append(elems, c)
	}
	switch {
	case len(elems) == 0 && ty.IsListType():
		return cty.ListValEmpty(et), nil
	case len(elems) == 0:
		return cty.SetValEmpty(et), nil
	case ty.IsListType():
		return cty.ListVal(elems), nil
	}
	return cty.SetVal(elems), nil
}
