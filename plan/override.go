package plan

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseKnobOverrides reads NAME=VALUE settings (the --knob flags of `frontier estimate`),
// each typed by the plan's knob of that name, or, for an engine option that is no knob, read
// as a whole number, a number, a boolean or else a string. As the plan's knobs are, each is
// checked against the plan's vLLM line: a name that is no flag of it, or a value its flag
// refuses, is an error.
func (p *Plan) ParseKnobOverrides(settings []string) (Config, error) {
	out := Config{}
	for _, s := range settings {
		name, value, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("--knob %q: want NAME=VALUE", s)
		}
		v, err := ParseKnobValue(p.Knob(name), value)
		if err == nil {
			err = p.checkOption(name, v)
		}
		if err != nil {
			return nil, fmt.Errorf("--knob %s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// ParseKnobValue reads one value of knob k from text. With a nil knob (an engine option the
// plan does not search) the value is a whole number, a number, a boolean or else a string,
// whichever reads first.
func ParseKnobValue(k *Knob, s string) (Value, error) {
	s = strings.TrimSpace(s)
	if k == nil {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, nil
		}
		if b, err := strconv.ParseBool(s); err == nil {
			return b, nil
		}
		return s, nil
	}
	switch k.Kind {
	case KnobInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want a whole number, got %q", s)
		}
		return n, nil
	case KnobFloat:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("want a number, got %q", s)
		}
		return f, nil
	}
	var names []string
	for _, v := range k.Values {
		if fmt.Sprint(v) == s {
			return v, nil
		}
		names = append(names, fmt.Sprint(v))
	}
	return nil, fmt.Errorf("want one of %s, got %q", strings.Join(names, ", "), s)
}

// SingleConfig builds the one configuration the overrides and the plan name: each knob's
// override, else its only value; every knob with more than one value needs an override.
// Overrides of engine options that are no knob are kept.
func (p *Plan) SingleConfig(overrides Config) (Config, error) {
	cfg := Config{}
	var missing []string
	for _, k := range p.Knobs {
		if v, ok := overrides[k.Name]; ok {
			cfg[k.Name] = v
			continue
		}
		if n, ok := k.Size(); ok && n == 1 {
			pts, _ := k.Points()
			cfg[k.Name] = pts[0]
			continue
		}
		missing = append(missing, k.Name)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("knobs with more than one value need one for an estimate: %s (set them with --knob NAME=VALUE, or estimate every configuration with --all)", strings.Join(missing, ", "))
	}
	for k, v := range overrides {
		cfg[k] = v
	}
	return cfg, nil
}

// GridSizeWith is the number of configurations of the grid once the overridden knobs are
// fixed, at most math.MaxInt; 0 when a knob that is not overridden is continuous.
func (p *Plan) GridSizeWith(overrides Config) int {
	n := 1
	for _, k := range p.Knobs {
		if _, ok := overrides[k.Name]; ok {
			continue
		}
		size, ok := k.Size()
		if !ok {
			return 0
		}
		if size > 0 && n > math.MaxInt/size {
			return math.MaxInt
		}
		n *= size
	}
	return n
}

// GridWith is the grid with the overrides applied to every configuration, each distinct
// configuration once, in grid order. Grid's error says why there is none.
func (p *Plan) GridWith(overrides Config) ([]Config, error) {
	grid, err := p.Grid()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []Config
	for _, cfg := range grid {
		for k, v := range overrides {
			cfg[k] = v
		}
		if key := cfg.String(); !seen[key] {
			seen[key] = true
			out = append(out, cfg)
		}
	}
	return out, nil
}

// Alternatives are the values knob k takes in an estimate of its effect around current:
// every listed value, or for a range its ends and half and twice the current value (on the
// knob's step), each once and none equal to current.
func (k Knob) Alternatives(current Value) []Value {
	cur, isNum := toFloat(current)
	var cands []Value
	if len(k.Values) > 0 {
		cands = k.Values
	} else if isNum {
		for _, f := range []float64{k.Min, cur / 2, cur * 2, k.Max} {
			if f < k.Min || f > k.Max {
				continue
			}
			if k.Step > 0 {
				f = k.Min + math.Round((f-k.Min)/k.Step)*k.Step
			}
			if k.Kind == KnobInt {
				cands = append(cands, int64(math.Round(f)))
			} else {
				cands = append(cands, math.Round(f*1e6)/1e6)
			}
		}
	}
	var out []Value
	for _, c := range cands {
		f, ok := toFloat(c)
		same := fmt.Sprint(c) == fmt.Sprint(current) || (ok && isNum && math.Abs(f-cur) <= 1e-9*math.Max(1, math.Abs(cur)))
		dup := false
		for _, o := range out {
			if fmt.Sprint(o) == fmt.Sprint(c) {
				dup = true
			}
		}
		if !same && !dup {
			out = append(out, c)
		}
	}
	return out
}

// checkOption checks one engine option set outside the knob blocks against the plan's vLLM
// line, as checkVLLMFlags checks the knobs; a table that stands in for another version, and
// an engine with flags of its own, leave it to the engine.
func (p *Plan) checkOption(name string, v Value) error {
	line := p.flagLine()
	if line == nil || line.Warning != "" || isPseudoKnob(name) || p.Engine.ownFlag(name) ||
		name == "quantization" && v == QuantizationNone {
		return nil
	}
	err := line.CheckValue(name, v)
	if err == nil {
		return nil
	}
	if unknownFlag(err) {
		msg := fmt.Sprintf("%s has no flag --%s", p.lineLabel(line), strings.ReplaceAll(name, "_", "-"))
		if near := line.Nearest(name, 3); len(near) > 0 {
			msg += "; did you mean " + knobList(near) + "?"
		}
		return errors.New(msg)
	}
	return fmt.Errorf("%s does not take %s: %w", p.lineLabel(line), formatValue(v), err)
}
