package record

import (
	"fmt"
	"strings"
)

// ViolationKind says what kind of bound a trial missed.
type ViolationKind string

// Violation kinds.
const (
	// ViolationSLO: a workload class's SLO metric was measured beyond its bound.
	ViolationSLO ViolationKind = "slo"
	// ViolationUnmeasured: an SLO metric was not measured; it counts as missed.
	ViolationUnmeasured ViolationKind = "unmeasured"
	// ViolationNoneCompleted: no request of the class completed, so its latency bounds are
	// missed.
	ViolationNoneCompleted ViolationKind = "none_completed"
	// ViolationQuality: a quality gate failed.
	ViolationQuality ViolationKind = "quality"
	// ViolationCheck: a plan check failed (or could not be evaluated).
	ViolationCheck ViolationKind = "check"
	// ViolationObjective: the objectives could not be evaluated.
	ViolationObjective ViolationKind = "objective"
	// ViolationLaunch: the engine failed to start, or exited during the workload.
	ViolationLaunch ViolationKind = "launch"
	// ViolationPreScreen: the memory model rejected the configuration before launch.
	ViolationPreScreen ViolationKind = "prescreen"
	// ViolationRule: a plan rule rejected the configuration.
	ViolationRule ViolationKind = "rule"
	// ViolationPruned: the workload stopped early because an SLO was already missed.
	ViolationPruned ViolationKind = "pruned"
)

// Violation is one bound a trial missed, as data: the report groups failures by it, and the
// search weighs how far a trial missed.
type Violation struct {
	Kind ViolationKind `json:"kind"`
	// Class is the workload class of an SLO, or empty for the total and for gates and checks.
	Class string `json:"class,omitempty"`
	// Metric is the SLO metric; for a gate or a check, its name; for a rule, the rule's name.
	Metric string `json:"metric,omitempty"`
	// Value is what was measured and Bound the bound it missed; AtLeast is true for a lower
	// bound. Both are zero where there is no number (an unmeasured metric, a launch failure).
	Value   float64 `json:"value,omitempty"`
	Bound   float64 `json:"bound,omitempty"`
	AtLeast bool    `json:"at_least,omitempty"`
	// Run is the measurement run that missed: 0 for the trial's own run, 1.. for
	// confirmation runs.
	Run int `json:"run,omitempty"`
	// Failure is the failure class of a launch or pre-screen violation.
	Failure FailureClass `json:"failure,omitempty"`
	// Message is the text a person reads: a gate's or check's reason, an engine's message.
	Message string `json:"message,omitempty"`
}

// Group is a key that is the same for violations of the same kind on the same bound, whatever
// the measured value: what a report groups failures by.
func (v Violation) Group() string {
	parts := []string{string(v.Kind)}
	for _, s := range []string{v.Class, v.Metric, string(v.Failure)} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

// String says the violation in words, as a trial's Reason lists it.
func (v Violation) String() string {
	var s string
	switch v.Kind {
	case ViolationSLO:
		op := ">"
		if v.AtLeast {
			op = "<"
		}
		s = fmt.Sprintf("%s: %s %.4g %s %.4g", v.Class, v.Metric, v.Value, op, v.Bound)
	case ViolationUnmeasured:
		s = fmt.Sprintf("%s: %s was not measured", v.Class, v.Metric)
	case ViolationNoneCompleted:
		s = fmt.Sprintf("%s: no request completed", v.Class)
		if v.Message != "" {
			s += ": " + v.Message
		}
	case ViolationCheck:
		s = fmt.Sprintf("check %q: %s", v.Metric, v.Message)
	case ViolationRule:
		s = fmt.Sprintf("rule %q: %s", v.Metric, v.Message)
	default:
		s = v.Message
	}
	if v.Run > 0 {
		s = fmt.Sprintf("confirmation run %d: %s", v.Run, s)
	}
	return s
}

// MissedBy is how far a trial that is not feasible missed, from its recorded Violation: 1
// (as if it did not run) when none is recorded, since how far it missed is then unknown.
func MissedBy(violation float64) float64 {
	if violation <= 0 {
		return 1
	}
	return violation
}
