package plan

// This file lists the functions the rest of frontier calls. Their bodies are filled in by the
// plan language's implementation.

// LoadOptions carries the variable sources of Terraform's precedence, lowest first:
// defaults in the plan, FRONTIER_VAR_<name> from Environ, VarFiles in order, Vars in order.
type LoadOptions struct {
	Vars     []string // "name=value", from -var
	VarFiles []string // from -var-file
	Environ  []string // "KEY=value", usually os.Environ()
}

// Violation is a rule that a configuration breaks.
type Violation struct {
	Rule    string
	Message string
}

// CheckResult is the outcome of one check block for one trial.
type CheckResult struct {
	Name    string
	Passed  bool
	Message string
}
