package search

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/c-bata/goptuna"

	"github.com/frontier-llm/frontier/plan"
)

// space is a plan's knobs as goptuna sees them: one distribution per knob, in declaration
// order, and the conversions between a knob's value and goptuna's internal representation.
type space struct {
	knobs []plan.Knob
	dists []any // goptuna distributions (values, not pointers), parallel to knobs
	// points holds each knob's finite set of values, or nil for a continuous knob.
	points [][]plan.Value
}

// newSpace builds the distributions of p's knobs in declaration order.
func newSpace(knobs []plan.Knob) (*space, error) {
	s := &space{knobs: knobs}
	for _, k := range knobs {
		pts, finite := k.Points()
		if !finite {
			pts = nil
		}
		var d any
		switch {
		case len(k.Values) > 0:
			choices := make([]string, len(k.Values))
			for i, v := range k.Values {
				choices[i] = formatValue(v)
			}
			d = goptuna.CategoricalDistribution{Choices: choices}
		case k.Log && k.Min > 0:
			d = goptuna.LogUniformDistribution{Low: k.Min, High: k.Max}
		case k.Kind == plan.KnobInt:
			step := int(k.Step)
			if step <= 1 {
				d = goptuna.IntUniformDistribution{Low: int(k.Min), High: int(k.Max)}
			} else {
				d = goptuna.StepIntUniformDistribution{Low: int(k.Min), High: int(k.Max), Step: step}
			}
		case k.Step > 0:
			d = goptuna.DiscreteUniformDistribution{Low: k.Min, High: k.Max, Q: k.Step}
		default:
			d = goptuna.UniformDistribution{Low: k.Min, High: k.Max}
		}
		if len(k.Values) == 0 && k.Max < k.Min {
			return nil, fmt.Errorf("knob %q: max %v is below min %v", k.Name, k.Max, k.Min)
		}
		s.dists = append(s.dists, d)
		s.points = append(s.points, pts)
	}
	return s, nil
}

// toValue converts goptuna's internal representation of knob i to the knob's value,
// snapped onto the knob's domain.
func (s *space) toValue(i int, ir float64) plan.Value {
	k := s.knobs[i]
	if len(k.Values) > 0 {
		idx := int(math.Round(ir))
		idx = max(0, min(idx, len(k.Values)-1))
		return k.Values[idx]
	}
	return s.snap(i, ir)
}

// snap rounds a number onto knob i's domain: its step, its bounds, whole numbers for an
// integer knob.
func (s *space) snap(i int, x float64) plan.Value {
	k := s.knobs[i]
	if math.IsNaN(x) {
		x = k.Min
	}
	x = math.Max(k.Min, math.Min(k.Max, x))
	if k.Step > 0 {
		n := math.Round((x - k.Min) / k.Step)
		x = k.Min + n*k.Step
		if x > k.Max+1e-9 {
			x -= k.Step
		}
	}
	if k.Kind == plan.KnobInt {
		return int64(math.Round(x))
	}
	// Drop floating-point noise so that equal settings compare equal.
	x, _ = strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
	return x
}

// toInternal converts a knob value to goptuna's internal representation; ok is false when
// the value is not in the knob's domain.
func (s *space) toInternal(i int, v plan.Value) (float64, bool) {
	k := s.knobs[i]
	if len(k.Values) > 0 {
		want := formatValue(v)
		for j, c := range k.Values {
			if formatValue(c) == want {
				return float64(j), true
			}
		}
		return 0, false
	}
	f, ok := toFloat(v)
	if !ok || f < k.Min-1e-9 || f > k.Max+1e-9 {
		return 0, false
	}
	return f, true
}

// fromUnit maps u in [0, 1) to a value of knob i: an index into a finite knob, a log or a
// linear position in a numeric range. Random and quasi-random samplers use it.
func (s *space) fromUnit(i int, u float64) plan.Value {
	k := s.knobs[i]
	u = math.Max(0, math.Min(u, math.Nextafter(1, 0)))
	if len(k.Values) > 0 {
		return k.Values[int(u*float64(len(k.Values)))]
	}
	if k.Log && k.Min > 0 {
		lo, hi := math.Log(k.Min), math.Log(k.Max)
		return s.snap(i, math.Exp(lo+u*(hi-lo)))
	}
	if pts := s.points[i]; pts != nil {
		return pts[int(u*float64(len(pts)))]
	}
	return s.snap(i, k.Min+u*(k.Max-k.Min))
}

// normalize converts a config decoded from JSON (numbers as float64) to the knobs' types.
func (s *space) normalize(c map[string]any) (plan.Config, error) {
	out := make(plan.Config, len(s.knobs))
	for i, k := range s.knobs {
		v, ok := c[k.Name]
		if !ok {
			return nil, fmt.Errorf("knob %q has no value", k.Name)
		}
		ir, ok := s.toInternal(i, v)
		if !ok {
			return nil, fmt.Errorf("knob %q: %v is not one of its values", k.Name, v)
		}
		out[k.Name] = s.toValue(i, ir)
	}
	return out, nil
}

// configKey identifies a configuration: the hash of its canonical JSON.
func configKey(c plan.Config) string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s=%s\n", n, formatValue(c[n]))
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// formatValue renders a knob value the same way whatever its Go type after a JSON round trip.
func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', 12, 64)
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return formatValue(f)
		}
		return x.String()
	default:
		return fmt.Sprint(v)
	}
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// gpusOf is how many GPUs a configuration occupies: tensor x pipeline x data parallel size,
// times the instances of a disaggregated deployment (plan.Config.GPUs).
func gpusOf(c plan.Config) int { return c.GPUs() }

// settings lists a configuration in knob declaration order.
func (s *space) settings(c plan.Config) []setting {
	out := make([]setting, 0, len(s.knobs))
	for _, k := range s.knobs {
		out = append(out, setting{k.Name, c[k.Name]})
	}
	return out
}

type setting struct {
	name  string
	value any
}

// describe renders a configuration as "k=v k=v" in declaration order.
func (s *space) describe(c plan.Config) string {
	out := ""
	for i, st := range s.settings(c) {
		if i > 0 {
			out += " "
		}
		v := st.value
		if str, ok := v.(string); ok {
			out += st.name + "=" + str
			continue
		}
		out += st.name + "=" + formatValue(v)
	}
	return out
}
