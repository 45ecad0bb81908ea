package search

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/record"

	"github.com/frontier-llm/frontier/plan"
)

// cached answers from outcomes computed beforehand: the whole grid, estimated once.
type cached struct {
	outcomes map[string]*outcome
}

func (c *cached) evaluate(_ context.Context, j job) (*outcome, error) {
	o, ok := c.outcomes[configKey(j.config)]
	if !ok {
		return nil, fmt.Errorf("configuration %v is not in the grid", j.config)
	}
	cp := *o
	return &cp, nil
}

func (c *cached) close() {}

// estimateGrid evaluates every configuration the rules allow, on all CPUs.
func estimateGrid(b *testing.B, p *plan.Plan) ([]plan.Config, map[string]*outcome) {
	grid, err := p.Grid()
	if err != nil {
		b.Fatal(err)
	}
	est, err := newStudyEstimator(p, nil)
	if err != nil {
		b.Fatal(err)
	}
	outs := make([]*outcome, len(grid))
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, len(grid))
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o, err := est.evaluate(context.Background(), job{config: grid[i], seed: uint64(p.Study.Seed)})
				if err != nil {
					errs <- err
					continue
				}
				outs[i] = o
			}
		}()
	}
	for i := range grid {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	m := make(map[string]*outcome, len(grid))
	for i, c := range grid {
		m[configKey(c)] = outs[i]
	}
	return grid, m
}

// normalizedFront judges every outcome as a trial would be judged and returns the feasible
// objective vectors in minimisation form.
func feasiblePoints(p *plan.Plan, configs []plan.Config, outs map[string]*outcome) [][]float64 {
	r := &runner{p: p, prog: newProgress(nil, nil, 0, time.Now())}
	maximize := make([]bool, len(p.Objectives))
	for i, o := range p.Objectives {
		maximize[i] = o.Maximize
	}
	var pts [][]float64
	for _, c := range configs {
		o := *outs[configKey(c)]
		rec := &record.Trial{Config: map[string]any(c), GPUs: c.GPUs()}
		r.judge(rec, c, &o)
		if rec.State != record.StateComplete {
			continue
		}
		v, ok := objectiveVector(rec, p.Objectives)
		if ok {
			pts = append(pts, record.Orient(v, maximize))
		}
	}
	return pts
}

// normalizer maps minimisation-form points to [0, 1] by the ideal and nadir of the true
// front, with the reference point at 1.1 in every coordinate.
type normalizer struct{ lo, hi []float64 }

func (n normalizer) apply(pts [][]float64) [][]float64 {
	out := make([][]float64, len(pts))
	for i, p := range pts {
		q := make([]float64, len(p))
		for j := range p {
			q[j] = (p[j] - n.lo[j]) / math.Max(n.hi[j]-n.lo[j], 1e-12)
		}
		out[i] = q
	}
	return out
}

// BenchmarkSearchEfficiency is the search benchmark of the README: on a space of 1,120
// configurations evaluated with the offline estimator, where the true Pareto front is known
// from the whole grid, it runs 30-trial studies with tpe, random and grid search over 10
// seeds and reports the hypervolume each reaches as a share of the true front's.
//
//	go test -run '^$' -bench SearchEfficiency -benchtime 1x ./search
func BenchmarkSearchEfficiency(b *testing.B) {
	const budget, seeds = 30, 10
	base := loadPlanB(b, "bench.hcl")
	start := time.Now()
	grid, outs := estimateGrid(b, base)
	gridTime := time.Since(start)
	truePts := feasiblePoints(base, grid, outs)
	var trueFront [][]float64
	for _, i := range record.NonDominated(truePts) {
		trueFront = append(trueFront, truePts[i])
	}
	n := normalizer{lo: make([]float64, len(base.Objectives)), hi: make([]float64, len(base.Objectives))}
	for j := range n.lo {
		n.lo[j], n.hi[j] = math.Inf(1), math.Inf(-1)
		for _, p := range trueFront {
			n.lo[j] = math.Min(n.lo[j], p[j])
			n.hi[j] = math.Max(n.hi[j], p[j])
		}
	}
	ref := make([]float64, len(n.lo))
	for i := range ref {
		ref[i] = 1.1
	}
	trueHV := record.Hypervolume(n.apply(trueFront), ref)
	b.Logf("grid: %d configurations, %d feasible, true front %d points, estimated in %s", len(grid), len(truePts), len(trueFront), gridTime.Round(time.Millisecond))

	ratios := map[string][]float64{}
	for _, sampler := range []string{SamplerTPE, SamplerRandom, SamplerGrid} {
		for seed := 1; seed <= seeds; seed++ {
			p := loadPlanB(b, "bench.hcl", "sampler="+sampler, fmt.Sprintf("seed=%d", seed))
			db := filepath.Join(b.TempDir(), "bench.db")
			sum, err := Run(context.Background(), p, Options{Storage: db, Estimate: true, Trials: budget, eval: &cached{outs}})
			if err != nil {
				b.Fatal(err)
			}
			found := feasibleOf(sum.Record, p)
			ratios[sampler] = append(ratios[sampler], record.Hypervolume(n.apply(found), ref)/trueHV)
			if sampler == SamplerGrid {
				break // grid search does not depend on the seed
			}
		}
	}
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "hypervolume after %d trials, share of the true front's (%d seeds)\n", budget, seeds)
	fmt.Fprintf(&tbl, "%-8s %8s %8s %8s\n", "sampler", "median", "min", "max")
	med := map[string]float64{}
	for _, s := range []string{SamplerTPE, SamplerRandom, SamplerGrid} {
		r := append([]float64(nil), ratios[s]...)
		sort.Float64s(r)
		med[s] = median(r)
		fmt.Fprintf(&tbl, "%-8s %7.1f%% %7.1f%% %7.1f%%\n", s, 100*med[s], 100*r[0], 100*r[len(r)-1])
	}
	fmt.Print(tbl.String())
	if med[SamplerTPE] < 0.9 {
		b.Errorf("tpe's median hypervolume is %.1f%% of the true front's; want at least 90%%", 100*med[SamplerTPE])
	}
	if med[SamplerTPE] <= med[SamplerRandom] {
		b.Errorf("tpe's median (%.1f%%) is not above random search's (%.1f%%)", 100*med[SamplerTPE], 100*med[SamplerRandom])
	}
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// feasibleOf lists a study's complete trials' objectives in minimisation form.
func feasibleOf(rec *record.Study, p *plan.Plan) [][]float64 {
	maximize := make([]bool, len(p.Objectives))
	for i, o := range p.Objectives {
		maximize[i] = o.Maximize
	}
	var pts [][]float64
	for i := range rec.Trials {
		t := &rec.Trials[i]
		if t.State != record.StateComplete {
			continue
		}
		if v, ok := objectiveVector(t, p.Objectives); ok {
			pts = append(pts, record.Orient(v, maximize))
		}
	}
	return pts
}

func loadPlanB(b *testing.B, name string, vars ...string) *plan.Plan {
	b.Helper()
	p, err := plan.Load(filepath.Join("testdata", name), plan.LoadOptions{Vars: vars})
	if err != nil {
		b.Fatalf("load %s: %v", name, err)
	}
	return p
}
