package search

import (
	"github.com/frontier-llm/frontier/engine"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/search/storage"
	"github.com/frontier-llm/frontier/sim"
)

// studyRelease is what a run of p records about itself on the study: the release running it
// (Options.Version), whether its trials are estimates (--estimate) and, when they are
// simulated (--estimate, or an engine whose numbers are the simulator's), the performance
// model's version.
func studyRelease(p *plan.Plan, opts Options) storage.StudyRelease {
	rel := storage.StudyRelease{Release: opts.Version, Estimated: opts.Estimate}
	if opts.Estimate || engine.MustLookup(p.Engine.Kind).Simulated {
		rel.SimModel = sim.ModelVersion
	}
	return rel
}

// simModel is the performance model version of this run's simulated trials; empty when they
// are measured on an engine.
func (r *runner) simModel() string {
	return studyRelease(r.p, r.opts).SimModel
}

// baselineKey is the attribute a quality gate's baseline is stored under: per gate and
// search space, and for a simulated baseline per performance model version as well, so
// that a baseline another model version simulated is measured again, not reused.
func (r *runner) baselineKey(gate string) string {
	if m := r.simModel(); m != "" {
		return storage.SimBaselineKey(gate, r.p.SpaceHash, m)
	}
	return storage.BaselineKey(gate, r.p.SpaceHash)
}

// studyStorage is where a run of p keeps its study: opts.Storage, or by default a SQLite file
// beside the plan, one for measurements and another for estimates.
func studyStorage(p *plan.Plan, opts Options) string {
	switch {
	case opts.Storage != "":
		return opts.Storage
	case opts.Estimate:
		return storage.DefaultEstimateStorage(p.Filename)
	}
	return storage.DefaultStorage(p.Filename)
}
