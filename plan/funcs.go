package plan

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/frontier-llm/frontier/workload"
)

// Families of the values that the plan's constructor functions return.
const (
	familyDist    = "distribution"
	familyArrival = "arrival"
)

// shapeType is the type of the value of a length distribution or an arrival process call:
// an object tagged with its family, so that decoding can tell them apart from user objects.
func shapeType() cty.Type {
	return cty.Object(map[string]cty.Type{
		"frontier_family": cty.String,
		"kind":            cty.String,
		"a":               cty.Number,
		"b":               cty.Number,
		"path":            cty.String,
	})
}

func shapeVal(family, kind string, a, b float64, path string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"frontier_family": cty.StringVal(family),
		"kind":            cty.StringVal(kind),
		"a":               cty.NumberFloatVal(a),
		"b":               cty.NumberFloatVal(b),
		"path":            cty.StringVal(path),
	})
}

// shape is a decoded distribution or arrival value.
type shape struct {
	family, kind string
	a, b         float64
	path         string
}

// asShape reads a value built by one of the constructor functions.
func asShape(v cty.Value) (shape, bool) {
	if v.IsNull() || !v.IsKnown() || !v.Type().Equals(shapeType()) {
		return shape{}, false
	}
	m := v.AsValueMap()
	a, _ := m["a"].AsBigFloat().Float64()
	b, _ := m["b"].AsBigFloat().Float64()
	return shape{
		family: m["frontier_family"].AsString(),
		kind:   m["kind"].AsString(),
		a:      a,
		b:      b,
		path:   m["path"].AsString(),
	}, true
}

func numParam(name string) function.Parameter {
	return function.Parameter{Name: name, Type: cty.Number}
}

func float(v cty.Value) float64 {
	f, _ := v.AsBigFloat().Float64()
	return f
}

// numberFunc builds a constructor of numeric parameters; check validates the arguments and
// returns the index of the bad one with a message.
func numberFunc(family, kind string, params []string, check func(a []float64) (int, string)) function.Function {
	ps := make([]function.Parameter, len(params))
	for i, p := range params {
		ps[i] = numParam(p)
	}
	return function.New(&function.Spec{
		Description: fmt.Sprintf("%s %s", kind, family),
		Params:      ps,
		Type:        function.StaticReturnType(shapeType()),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			a := make([]float64, 2)
			for i, v := range args {
				a[i] = float(v)
				if math.IsNaN(a[i]) || math.IsInf(a[i], 0) {
					return cty.NilVal, function.NewArgErrorf(i, "%s must be a finite number", params[i])
				}
			}
			if i, msg := check(a); msg != "" {
				return cty.NilVal, function.NewArgErrorf(i, "%s", msg)
			}
			return shapeVal(family, kind, a[0], a[1], ""), nil
		},
	})
}

func whole(f float64) bool { return f == math.Trunc(f) && !math.IsInf(f, 0) }

// planFunctions returns the functions of the plan language. trace() resolves its file against
// dir and requires that it exists.
func planFunctions(dir string) map[string]function.Function {
	fs := mathFunctions()
	fs["fixed"] = numberFunc(familyDist, string(workload.DistFixed), []string{"n"}, func(a []float64) (int, string) {
		if a[0] < 1 || !whole(a[0]) {
			return 0, "a fixed length must be a whole number of tokens, at least 1"
		}
		return 0, ""
	})
	fs["uniform"] = numberFunc(familyDist, string(workload.DistUniform), []string{"min", "max"}, func(a []float64) (int, string) {
		switch {
		case a[0] < 1 || !whole(a[0]):
			return 0, "the lower bound must be a whole number of tokens, at least 1"
		case !whole(a[1]):
			return 1, "the upper bound must be a whole number of tokens"
		case a[1] < a[0]:
			return 1, "the upper bound must not be below the lower bound"
		}
		return 0, ""
	})
	fs["normal"] = numberFunc(familyDist, string(workload.DistNormal), []string{"mean", "sd"}, func(a []float64) (int, string) {
		switch {
		case a[0] < 1:
			return 0, "the mean must be at least 1 token"
		case a[1] < 0:
			return 1, "the standard deviation must not be negative"
		}
		return 0, ""
	})
	fs["lognormal"] = numberFunc(familyDist, string(workload.DistLogNormal), []string{"mean", "sigma"}, func(a []float64) (int, string) {
		switch {
		case a[0] < 1:
			return 0, "the mean must be at least 1 token"
		case a[1] < 0:
			return 1, "sigma must not be negative"
		}
		return 0, ""
	})
	positiveRate := func(a []float64) (int, string) {
		if a[0] <= 0 {
			return 0, "the rate must be above 0 requests per second"
		}
		return 0, ""
	}
	fs["poisson"] = numberFunc(familyArrival, string(workload.ArrivalPoisson), []string{"rate"}, positiveRate)
	fs["constant"] = numberFunc(familyArrival, string(workload.ArrivalConstant), []string{"rate"}, positiveRate)
	fs["gamma"] = numberFunc(familyArrival, string(workload.ArrivalGamma), []string{"rate", "burstiness"}, func(a []float64) (int, string) {
		if a[0] <= 0 {
			return 0, "the rate must be above 0 requests per second"
		}
		if a[1] <= 0 {
			return 1, "burstiness must be above 0 (1 is Poisson, lower is burstier)"
		}
		return 0, ""
	})
	fs["concurrency"] = numberFunc(familyArrival, string(workload.ArrivalConcurrency), []string{"n"}, func(a []float64) (int, string) {
		if a[0] < 1 || !whole(a[0]) {
			return 0, "concurrency must be a whole number of requests, at least 1"
		}
		return 0, ""
	})
	fs["immediate"] = numberFunc(familyArrival, string(workload.ArrivalImmediate), nil, func([]float64) (int, string) { return 0, "" })
	fs["trace"] = function.New(&function.Spec{
		Description: "arrival times (and lengths) from a JSONL file",
		Params:      []function.Parameter{{Name: "path", Type: cty.String}},
		Type:        function.StaticReturnType(shapeType()),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := resolvePath(dir, args[0].AsString())
			if _, err := os.Stat(p); err != nil {
				return cty.NilVal, function.NewArgErrorf(0, "the trace file %q cannot be read: %v", args[0].AsString(), err)
			}
			return shapeVal(familyArrival, string(workload.ArrivalTrace), 0, 0, p), nil
		},
	})
	return fs
}

// mathFunctions are the functions available to every expression, including those evaluated
// per trial.
func mathFunctions() map[string]function.Function {
	return map[string]function.Function{
		"min":   stdlib.MinFunc,
		"max":   stdlib.MaxFunc,
		"abs":   stdlib.AbsoluteFunc,
		"ceil":  stdlib.CeilFunc,
		"floor": stdlib.FloorFunc,
		"log":   stdlib.LogFunc,
		"pow":   stdlib.PowFunc,
	}
}

// resolvePath makes p absolute, relative to dir when it is relative.
func resolvePath(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}
