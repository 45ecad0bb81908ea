package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/vllm"
)

// knobCell is a knob's value for a table cell: knobString, with a fractional number cut to
// four significant digits (a continuous knob's 0.928760161936 is shown as 0.9288); the
// recommended configuration's own table and every export keep the exact value.
func knobCell(v any) string {
	if x, ok := v.(float64); ok && x != math.Trunc(x) {
		return strconv.FormatFloat(x, 'g', 4, 64)
	}
	return knobString(v)
}

// knobString formats a knob value as an engine flag takes it: whole numbers without a
// decimal point, other numbers in their shortest form, booleans and strings as they are.
func knobString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return knobString(float64(x))
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

// knobFloat returns v as a number, when it is one.
func knobFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// sameValue reports whether two knob values are equal, numbers compared as numbers.
func sameValue(a, b any) bool {
	fa, oka := knobFloat(a)
	fb, okb := knobFloat(b)
	if oka && okb {
		return math.Abs(fa-fb) <= 1e-9*math.Max(1, math.Max(math.Abs(fa), math.Abs(fb)))
	}
	return knobString(a) == knobString(b)
}

// nearValue reports whether two knob values are the same for the purpose of changing one
// knob at a time: numbers within 5% of each other count as the same.
func nearValue(a, b any) bool {
	fa, oka := knobFloat(a)
	fb, okb := knobFloat(b)
	if oka && okb {
		return math.Abs(fa-fb) <= 0.05*math.Max(math.Abs(fa), math.Abs(fb))
	}
	return knobString(a) == knobString(b)
}

// VLLMDefault returns the value the current vLLM line (vllm.Current, `vllm serve`) uses for
// an option when no flag sets it, on the given GPU SKU (a catalog name such as "h100-sxm";
// the batch defaults depend on the GPU). It reports false for options whose default depends
// on the model. The defaults themselves live in package vllm.
func VLLMDefault(knob, sku string) (any, bool) {
	v, err := vllm.Lookup(vllm.Current)
	if err != nil {
		return nil, false
	}
	gpu := vllm.GPUUnknown
	if s, ok := hw.LookupSKU(sku); ok {
		gpu = vllm.ClassifyGPU(s.Name+" "+s.Display, s.MemoryGiB)
	}
	return v.Default(knob, gpu)
}

// isDefault reports whether a knob's value is vLLM's default on the SKU.
func isDefault(knob string, v any, sku string) bool {
	d, ok := VLLMDefault(knob, sku)
	return ok && sameValue(d, v)
}

// num formats a measured number with a precision that suits its size.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v == 0:
		return "0"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// pct formats a fraction as a signed percentage.
func pct(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*f)
}

// duration formats GPU seconds for people: seconds, minutes or hours.
func duration(s float64) string {
	switch {
	case s < 120:
		return fmt.Sprintf("%.0f s", s)
	case s < 7200:
		return fmt.Sprintf("%.1f min", s/60)
	default:
		return fmt.Sprintf("%.2f h", s/3600)
	}
}
