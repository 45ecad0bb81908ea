package plan

import (
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/frontier-llm/frontier/record"
)

// GridLimit is the largest number of configurations Grid enumerates at once.
const GridLimit = 1 << 20

// Size returns how many values a knob can take, and false when it is continuous (a float range
// without a step). Sizes too large for an int are math.MaxInt.
func (k Knob) Size() (int, bool) {
	if len(k.Values) > 0 {
		return len(k.Values), true
	}
	step := k.Step
	if step <= 0 {
		if k.Kind != KnobInt {
			return 0, false
		}
		step = 1
	}
	n := math.Floor((k.Max-k.Min)/step+1e-9) + 1
	if n >= math.MaxInt/2 || math.IsNaN(n) {
		return math.MaxInt, true
	}
	return int(math.Max(n, 0)), true
}

// Points returns every value of a finite domain in order, and false when the knob is
// continuous or its range has more than GridLimit values (sample such a range by its Min, Max
// and Step instead; Size still counts it). Values are int64 for an integer knob, float64,
// string or bool.
func (k Knob) Points() ([]Value, bool) {
	if len(k.Values) > 0 {
		return append([]Value(nil), k.Values...), true
	}
	n, ok := k.Size()
	if !ok || n > GridLimit {
		return nil, false
	}
	pts := make([]Value, 0, n)
	for i := range n {
		pts = append(pts, k.point(i))
	}
	return pts, true
}

// point returns the i-th value of a finite range.
func (k Knob) point(i int) Value {
	if len(k.Values) > 0 {
		return k.Values[i]
	}
	if k.Kind == KnobInt {
		step := int64(1)
		if k.Step > 0 {
			step = int64(k.Step)
		}
		return int64(k.Min) + int64(i)*step
	}
	return roundNear(k.Min+float64(i)*k.Step, k.Step)
}

// roundNear removes the floating-point noise of min + i*step, keeping the digits the step has.
func roundNear(v, step float64) float64 {
	if step <= 0 || math.Abs(v) > 1e12 {
		return v
	}
	digits := 12 - int(math.Floor(math.Log10(math.Max(math.Abs(v), 1e-300))))
	digits = max(0, min(digits, 15))
	f, err := strconv.ParseFloat(strconv.FormatFloat(v, 'f', digits, 64), 64)
	if err != nil {
		return v
	}
	return f
}

// Contains reports whether v is a value of the knob's domain: one of its values, or a number
// within its range (on its step, whole for an integer knob).
func (k Knob) Contains(v Value) bool {
	if len(k.Values) > 0 {
		for _, x := range k.Values {
			if valuesEqual(x, v) {
				return true
			}
		}
		return false
	}
	f, ok := toFloat(v)
	if !ok || math.IsNaN(f) {
		return false
	}
	eps := 1e-9 * math.Max(1, math.Max(math.Abs(k.Min), math.Abs(k.Max)))
	if f < k.Min-eps || f > k.Max+eps {
		return false
	}
	if k.Kind == KnobInt && !whole(f) {
		return false
	}
	if k.Step > 0 {
		n := (f - k.Min) / k.Step
		return math.Abs(n-math.Round(n)) < 1e-6
	}
	return true
}

func valuesEqual(a, b Value) bool {
	fa, aNum := toFloat(a)
	fb, bNum := toFloat(b)
	if aNum || bNum {
		return aNum && bNum && fa == fb
	}
	return a == b
}

func toFloat(v Value) (float64, bool) { return record.Number(v) }

// Normalize converts v to the Go type of the knob's values: int64 for an integer knob,
// float64 for a float knob; strings and booleans are returned as they are.
func (k Knob) Normalize(v Value) (Value, error) {
	switch x := v.(type) {
	case string, bool:
		return x, nil
	}
	f, ok := toFloat(v)
	if !ok {
		return nil, fmt.Errorf("knob %q: %v (%T) is not a number, a string or a boolean", k.Name, v, v)
	}
	switch k.Kind {
	case KnobInt:
		if !whole(f) {
			return nil, fmt.Errorf("knob %q is an integer knob; %v is not a whole number", k.Name, v)
		}
		return int64(f), nil
	case KnobFloat:
		return f, nil
	default:
		return nil, fmt.Errorf("knob %q takes strings or booleans, not the number %v", k.Name, v)
	}
}

// fromCty converts a plan value to a knob value of k's kind.
func (k Knob) fromCty(v cty.Value) (Value, error) {
	if v.IsNull() || !v.IsWhollyKnown() {
		return nil, fmt.Errorf("the value must not be null")
	}
	switch v.Type() {
	case cty.String:
		return v.AsString(), nil
	case cty.Bool:
		return v.True(), nil
	case cty.Number:
		return k.Normalize(float(v))
	}
	return nil, fmt.Errorf("%s is not a number, a string or a boolean", v.Type().FriendlyName())
}

// DomainString describes the knob's domain, such as [1, 2, 4] or 16..512 (log).
func (k Knob) DomainString() string {
	if len(k.Values) > 0 {
		parts := make([]string, len(k.Values))
		for i, v := range k.Values {
			parts[i] = formatValue(v)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	s := fmt.Sprintf("%g..%g", k.Min, k.Max)
	if k.Step > 0 {
		s += fmt.Sprintf(" step %g", k.Step)
	}
	if k.Log {
		s += " (log)"
	}
	return s
}

func formatValue(v Value) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// GridSize returns the number of configurations of the space (the product of the knobs'
// sizes, before rules), and false when a knob is continuous. A size too large for an int is
// math.MaxInt.
func (p *Plan) GridSize() (int, bool) {
	total := 1
	for _, k := range p.Knobs {
		n, ok := k.Size()
		if !ok {
			return 0, false
		}
		if n != 0 && total > math.MaxInt/n {
			total = math.MaxInt
			continue
		}
		total *= n
	}
	return total, true
}

// Grid returns every configuration of the space in a stable order, the first knob changing
// slowest. Rules are not applied. It fails when a knob is continuous or the grid has more than
// GridLimit configurations; GridSeq walks larger grids without holding them.
func (p *Plan) Grid() ([]Config, error) {
	n, ok := p.GridSize()
	if !ok {
		return nil, fmt.Errorf("the space has a continuous knob, so it has no grid")
	}
	if n > GridLimit {
		return nil, fmt.Errorf("the grid has %d configurations, more than the %d that can be listed at once", n, GridLimit)
	}
	seq, err := p.GridSeq()
	if err != nil {
		return nil, err
	}
	out := make([]Config, 0, n)
	for c := range seq {
		out = append(out, c)
	}
	return out, nil
}

// GridAt returns the configuration at index i of Grid's order, without listing the grid:
// for sampling a large space evenly.
func (p *Plan) GridAt(i int) (Config, error) {
	n, ok := p.GridSize()
	if !ok {
		return nil, fmt.Errorf("the space has a continuous knob, so it has no grid")
	}
	if i < 0 || i >= n {
		return nil, fmt.Errorf("grid index %d is outside [0, %d)", i, n)
	}
	c := make(Config, len(p.Knobs))
	for j := len(p.Knobs) - 1; j >= 0; j-- {
		k := p.Knobs[j]
		size, _ := k.Size()
		c[k.Name] = k.point(i % size)
		i /= size
	}
	return c, nil
}

// GridSeq yields every configuration of the space in Grid's order, one at a time. It fails
// when a knob is continuous.
func (p *Plan) GridSeq() (iter.Seq[Config], error) {
	sizes := make([]int, len(p.Knobs))
	for i, k := range p.Knobs {
		n, ok := k.Size()
		if !ok {
			return nil, fmt.Errorf("knob %q is continuous (a float range without a step), so the space has no grid", k.Name)
		}
		if n == 0 {
			return func(func(Config) bool) {}, nil
		}
		sizes[i] = n
	}
	knobs := p.Knobs
	return func(yield func(Config) bool) {
		idx := make([]int, len(knobs))
		for {
			c := make(Config, len(knobs))
			for i, k := range knobs {
				c[k.Name] = k.point(idx[i])
			}
			if !yield(c) {
				return
			}
			i := len(idx) - 1
			for ; i >= 0; i-- {
				idx[i]++
				if idx[i] < sizes[i] {
					break
				}
				idx[i] = 0
			}
			if i < 0 {
				return
			}
		}
	}, nil
}
