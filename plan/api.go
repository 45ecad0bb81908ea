package plan

// This file lists the functions the rest of frontier calls. Their bodies are filled in by the
// plan language's implementation.

// LoadOptions carries the variable sources of Terraform's precedence, lowest first:
// defaults in the plan, FRONTIER_VAR_<name> from Environ, VarFiles in order, Vars in order.
type LoadOptions struct {
	Vars     []string // "name=value", from -var
	VarFiles []string // from -var-file
	Environ  []string // "KEY=value", usually os.Environ()

	// SKUs and Architectures, when not nil, are the GPU SKU names and model architectures
	// frontier's catalogs know (hw.SKUs, sim.Archs). Load then checks hardware.sku, the values
	// of a knob "sku" and model.architecture against them: an unknown name is an error for the
	// sim engine, which cannot simulate it, and a warning for real engines, whose memory
	// pre-screen and prices need it.
	SKUs          []string
	Architectures []string
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
