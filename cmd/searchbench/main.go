package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search"
	"github.com/frontier-llm/frontier/sim"
	"github.com/frontier-llm/frontier/workload"
)

func main() {
	dir := flag.String("spaces", filepath.Join("search", "testdata", "bench"), "folder of the benchmark's plans")
	only := flag.String("only", "", "run only the spaces whose file name contains this")
	seeds := flag.Int("seeds", 10, "seeds per sampler")
	budgetsFlag := flag.String("budgets", "15,30,60", "trial counts to report, comma-separated")
	oracleDir := flag.String("oracle", "", "write each space's truth as JSON in this folder (for scripts/optuna_bench.py)")
	parallel := flag.Int("parallel", 4, "trials at once in the parallel run, on the scaled truth (0: skip it)")
	truthsFlag := flag.String("truths", "all", "truths to run, comma-separated: scaled, load, prefill, reversed, or all")
	flag.BoolVar(&verbose, "v", false, "print the true front, and the front each sampler found with seed 1")
	flag.Parse()
	budgets, err := parseBudgets(*budgetsFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "searchbench:", err)
		os.Exit(1)
	}
	chosen, err := lookupTruths(*truthsFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "searchbench:", err)
		os.Exit(1)
	}
	files, err := filepath.Glob(filepath.Join(*dir, "*.hcl"))
	if err != nil || len(files) == 0 {
		fmt.Fprintf(os.Stderr, "searchbench: no plans in %s\n", *dir)
		os.Exit(1)
	}
	sort.Strings(files)
	fmt.Printf("searchbench: %d CPUs, GOMAXPROCS %d, %s; %d seeds\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), *seeds)
	fmt.Println("prior: the offline model on the catalog's GPU; truths:")
	for _, t := range chosen {
		fmt.Printf("  %s: %s\n", t.name, t.note)
	}
	for _, f := range files {
		if *only != "" && !strings.Contains(filepath.Base(f), *only) {
			continue
		}
		if err := runSpace(os.Stdout, f, chosen, *seeds, budgets, *oracleDir, *parallel); err != nil {
			fmt.Fprintf(os.Stderr, "searchbench: %s: %v\n", f, err)
			os.Exit(1)
		}
	}
}

func parseBudgets(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-budgets: %q is not a positive trial count", f)
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}

// verbose prints fronts.
var verbose bool

// truthSKU is the perturbed GPU that stands for the real one.
func truthSKU(s hw.SKU) hw.SKU {
	f := func(what string) float64 {
		h := fnv.New64a()
		h.Write([]byte(s.Name + "/" + what))
		return 0.7 + 0.6*float64(h.Sum64()%1000)/999
	}
	s.BandwidthGBs *= f("bandwidth")
	s.BF16TFLOPS *= f("bf16")
	s.FP8TFLOPS *= f("fp8")
	s.INT8TOPS *= f("int8")
	s.InterconnectGBs *= f("interconnect")
	return s
}

// point is one allowed configuration under the truth.
type point struct {
	cfg       plan.Config
	m         *workload.Measurement
	startErr  error
	truth     verdict
	prior     []float64
	priorViol float64
	priorOK   bool
	priorSLO  []float64 // the model's SLO margins (search.SLOMargins)
}

// oracle is a space's truth.
type oracle struct {
	p        *plan.Plan
	truth    truth
	points   map[string]*point // by configuration text
	order    []string
	maximize []bool
	lo, hi   []float64 // the true front's ideal and nadir (minimisation form)
	trueHV   float64
}

func configText(c plan.Config) string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s=%v ", n, c[n])
	}
	return b.String()
}

// measureSpace measures every configuration the rules allow on the perturbed GPUs (the
// scaled truth, unjudged) and asks the prior for each.
func measureSpace(p *plan.Plan) ([]*point, error) {
	arch, ok := sim.LookupArch(p.Model.Architecture)
	if !ok {
		return nil, fmt.Errorf("model architecture %q is not in the catalog", p.Model.Architecture)
	}
	arch.Catalog = true
	seq, err := p.GridSeq()
	if err != nil {
		return nil, err
	}
	var pts []*point
	for c := range seq {
		v, err := p.CheckRules(c)
		if err != nil {
			return nil, err
		}
		if len(v) == 0 {
			pts = append(pts, &point{cfg: c})
		}
	}
	next := make(chan *point)
	errs := make(chan error, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prior, err := search.ModelPrior(p)
			if err != nil {
				errs <- err
				return
			}
			for pt := range next {
				if err := measureTruth(p, arch, pt); err != nil {
					errs <- err
					return
				}
				fc, ok := prior(pt.cfg)
				pt.prior, pt.priorViol, pt.priorSLO, pt.priorOK = fc.Objectives, fc.Violation, fc.Margins, ok
			}
		}()
	}
	for _, pt := range pts {
		next <- pt
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		return nil, err
	}
	return pts, nil
}

// buildOracle is a space's truth under t: the scaled measurements reshaped by t, judged.
func buildOracle(p *plan.Plan, base []*point, t truth) (*oracle, error) {
	o := &oracle{p: p, truth: t, points: map[string]*point{}}
	pts := make([]*point, len(base))
	for i, b := range base {
		cp := *b
		if b.m != nil {
			cp.m = deepCopy(b.m)
		}
		pts[i] = &cp
	}
	if t.reshape != nil {
		if err := t.reshape(p, pts); err != nil {
			return nil, err
		}
	}
	for _, pt := range pts {
		var m *workload.Measurement
		if pt.m != nil {
			m = copyMeasurement(pt.m)
		}
		pt.truth = verdictOf(p, search.Judge(p, pt.cfg, m, pt.startErr))
	}
	for _, o2 := range p.Objectives {
		o.maximize = append(o.maximize, o2.Maximize)
	}
	var feasible [][]float64
	for _, pt := range pts {
		key := configText(pt.cfg)
		o.points[key] = pt
		o.order = append(o.order, key)
		if pt.truth.Feasible {
			feasible = append(feasible, record.Orient(pt.truth.Objectives, o.maximize))
		}
	}
	if len(feasible) == 0 {
		return nil, errors.New("no configuration meets the SLOs under the truth")
	}
	var front [][]float64
	for _, i := range record.NonDominated(feasible) {
		front = append(front, feasible[i])
	}
	d := len(o.maximize)
	o.lo, o.hi = make([]float64, d), make([]float64, d)
	for j := 0; j < d; j++ {
		o.lo[j], o.hi[j] = math.Inf(1), math.Inf(-1)
		for _, f := range front {
			o.lo[j] = math.Min(o.lo[j], f[j])
			o.hi[j] = math.Max(o.hi[j], f[j])
		}
	}
	o.trueHV = o.hv(front)
	return o, nil
}

// rankAgreement is Spearman's rank correlation of the prior's and the truth's objectives
// over the configurations both call feasible, per objective.
func rankAgreement(o *oracle) string {
	var parts []string
	for j, ob := range o.p.Objectives {
		var a, b []float64
		for _, k := range o.order {
			pt := o.points[k]
			if pt.truth.Feasible && pt.priorOK && pt.priorViol == 0 && j < len(pt.prior) && pt.truth.Objectives != nil {
				a, b = append(a, pt.prior[j]), append(b, pt.truth.Objectives[j])
			}
		}
		if len(a) < 3 {
			parts = append(parts, ob.Name+" ranks n/a")
			continue
		}
		pairs := make([]record.StandingPair, len(a))
		for i := range a {
			pairs[i] = record.StandingPair{Predicted: []float64{a[i]}, Measured: []float64{b[i]}, PredictedFeasible: true, Feasible: true}
		}
		st := record.NewStanding([]string{ob.Name}, pairs)
		parts = append(parts, fmt.Sprintf("%s ranks %.2f over %d (prior %.2gx the truth)", ob.Name, st.Objectives[0].Ranks, len(a), st.Objectives[0].Ratio))
	}
	return strings.Join(parts, ", ")
}

// onFront reports whether no feasible configuration dominates objs under the truth.
func onFront(o *oracle, objs []float64) bool {
	q := record.Orient(objs, o.maximize)
	for _, pt := range o.points {
		if pt.truth.Feasible && record.Dominates(record.Orient(pt.truth.Objectives, o.maximize), q) {
			return false
		}
	}
	return true
}

// measureTruth estimates a configuration on the perturbed GPU.
func measureTruth(p *plan.Plan, arch sim.Arch, pt *point) error {
	name := p.Hardware.SKU
	if s, ok := pt.cfg["sku"].(string); ok {
		name = s
	}
	sku, ok := hw.LookupSKU(name)
	if !ok {
		return fmt.Errorf("GPU %q is not in the catalog", name)
	}
	sku = truthSKU(sku)
	settings := map[string]any{}
	for k, v := range pt.cfg {
		if k != "sku" {
			settings[k] = v
		}
	}
	ecfg, err := sim.ConfigFromSettings(settings, p.Model.MaxModelLen)
	if err != nil {
		pt.startErr = &sim.StartupError{Class: "invalid_args", Message: err.Error()}
	} else {
		ecfg.SKU = sku.Name
		if _, err := sim.CheckStartup(arch, sku, ecfg); err != nil {
			pt.startErr = err
		} else {
			pt.m, pt.startErr = sim.Estimate(context.Background(), arch, sku, ecfg, p.Workloads, uint64(p.WorkloadSeed()))
		}
	}
	var se *sim.StartupError
	if pt.startErr != nil && !errors.As(pt.startErr, &se) {
		return pt.startErr
	}
	if pt.m != nil {
		pt.m.Simulated = true
	}
	return nil
}

// deepCopy copies a measurement's classes and total, with their metrics, intervals and
// quantiles, for a truth to reshape.
func deepCopy(m *workload.Measurement) *workload.Measurement {
	cp := *m
	res := func(r *workload.Result) *workload.Result {
		if r == nil {
			return nil
		}
		c := *r
		c.Metrics = make(map[string]float64, len(r.Metrics))
		for k, v := range r.Metrics {
			c.Metrics[k] = v
		}
		if r.CI != nil {
			c.CI = make(map[string][2]float64, len(r.CI))
			for k, v := range r.CI {
				c.CI[k] = v
			}
		}
		if r.Quantiles != nil {
			c.Quantiles = make(map[string][]float64, len(r.Quantiles))
			for k, v := range r.Quantiles {
				c.Quantiles[k] = append([]float64(nil), v...)
			}
		}
		return &c
	}
	cp.Total = res(m.Total)
	if m.Workloads != nil {
		cp.Workloads = make(map[string]*workload.Result, len(m.Workloads))
		for k, v := range m.Workloads {
			cp.Workloads[k] = res(v)
		}
	}
	return &cp
}

// verdict is how a configuration fares under the truth.
type verdict struct {
	Objectives []float64 // the plan's order and orientation; nil when it has none
	Feasible   bool
	Violation  float64
}

func verdictOf(p *plan.Plan, t record.Trial) verdict {
	v := verdict{Feasible: t.State == record.StateComplete, Violation: t.Violation}
	if !v.Feasible {
		v.Violation = record.MissedBy(v.Violation)
	}
	objs := make([]float64, 0, len(p.Objectives))
	for _, o := range p.Objectives {
		x, ok := t.Objectives[o.Name]
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			return v
		}
		objs = append(objs, x)
	}
	v.Objectives = objs
	return v
}

// copyMeasurement copies what judging a measurement may change (the total's metrics).
func copyMeasurement(m *workload.Measurement) *workload.Measurement {
	cp := *m
	if m.Total != nil {
		t := *m.Total
		t.Metrics = make(map[string]float64, len(m.Total.Metrics))
		for k, v := range m.Total.Metrics {
			t.Metrics[k] = v
		}
		cp.Total = &t
	}
	return &cp
}

// hv is the hypervolume of points (minimisation form) normalised by the true front's ideal
// and nadir, with the reference point at 1.1.
func (o *oracle) hv(pts [][]float64) float64 {
	norm := make([][]float64, len(pts))
	ref := make([]float64, len(o.lo))
	for j := range ref {
		ref[j] = 1.1
	}
	for i, p := range pts {
		q := make([]float64, len(p))
		for j := range p {
			q[j] = (p[j] - o.lo[j]) / math.Max(o.hi[j]-o.lo[j], 1e-12)
		}
		norm[i] = q
	}
	return record.Hypervolume(norm, ref)
}

// variant is one sampler setting of the table.
type variant struct {
	name     string
	sampler  string
	prior    bool
	parallel int
}

func runSpace(w io.Writer, file string, chosen []truth, seeds int, budgets []int, oracleDir string, parallel int) error {
	base, err := plan.Load(file, plan.LoadOptions{})
	if err != nil {
		return err
	}
	start := time.Now()
	measured, err := measureSpace(base)
	if err != nil {
		return err
	}
	for _, t := range chosen {
		o, err := buildOracle(base, measured, t)
		if err != nil {
			return fmt.Errorf("truth %s: %w", t.name, err)
		}
		if err := runTruth(w, o, file, seeds, budgets, oracleDir, parallel, time.Since(start)); err != nil {
			return err
		}
		start = time.Now()
	}
	return nil
}

// runTruth runs every sampler on one space under one truth.
func runTruth(w io.Writer, o *oracle, file string, seeds int, budgets []int, oracleDir string, parallel int, took time.Duration) error {
	base := o.p
	feasible, agree := 0, 0
	for _, k := range o.order {
		pt := o.points[k]
		if pt.truth.Feasible {
			feasible++
		}
		if pt.priorOK && (pt.priorViol == 0) == pt.truth.Feasible {
			agree++
		}
	}
	fmt.Fprintf(w, "\n%s / %s truth: %d configurations the rules allow, %d feasible under the truth; the prior's verdict agrees on %d; %s; truth and prior in %s\n",
		base.Study.Name, o.truth.name, len(o.order), feasible, agree, rankAgreement(o), took.Round(time.Millisecond))
	if verbose {
		for _, k := range o.order {
			pt := o.points[k]
			if pt.truth.Feasible && onFront(o, pt.truth.Objectives) {
				fmt.Fprintf(w, "  true front: %s %v (prior %v, violation %.2f)\n", k, pt.truth.Objectives, pt.prior, pt.priorViol)
			}
		}
	}
	if oracleDir != "" {
		if err := writeOracle(o, filepath.Join(oracleDir, base.Study.Name+"-"+o.truth.name+".json"), seeds, budgets); err != nil {
			return err
		}
	}
	variants := []variant{
		{"frontier tpe (prior)", search.SamplerTPE, true, 1},
		{"frontier tpe (no prior)", search.SamplerTPE, false, 1},
		{"frontier random", search.SamplerRandom, false, 1},
	}
	if parallel > 1 && o.truth.reshape == nil {
		variants = append(variants, variant{fmt.Sprintf("frontier tpe (prior), parallel %d", parallel), search.SamplerTPE, true, parallel})
	}
	maxBudget := budgets[len(budgets)-1]
	fmt.Fprintf(w, "%-36s", "sampler")
	for _, b := range budgets {
		fmt.Fprintf(w, " %7s %7s", fmt.Sprintf("%d med", b), fmt.Sprintf("%d min", b))
	}
	fmt.Fprintf(w, " %9s\n", "to 95%")
	for _, v := range variants {
		vstart := time.Now()
		ratios := make([][]float64, len(budgets))
		var reach []int
		for seed := 1; seed <= seeds; seed++ {
			curve, err := runStudy(o, file, v, seed, maxBudget)
			if err != nil {
				return fmt.Errorf("%s seed %d: %w", v.name, seed, err)
			}
			for i, b := range budgets {
				ratios[i] = append(ratios[i], curve[min(b, len(curve))-1])
			}
			r := maxBudget + 1
			for i, x := range curve {
				if x >= 0.95 {
					r = i + 1
					break
				}
			}
			reach = append(reach, r)
		}
		fmt.Fprintf(w, "%-36s", v.name)
		for i := range budgets {
			sort.Float64s(ratios[i])
			fmt.Fprintf(w, " %7.3f %7.3f", median(ratios[i]), ratios[i][0])
		}
		sort.Ints(reach)
		fmt.Fprintf(w, " %9s   (%s)\n", reachText(reach, maxBudget), time.Since(vstart).Round(time.Second))
	}
	return nil
}

// reachText is the median number of trials to 95% of the true hypervolume, ">N" when
// the median study did not reach it.
func reachText(sorted []int, maxBudget int) string {
	m := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		m = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2] + 1) / 2
	}
	if m > maxBudget {
		return fmt.Sprintf(">%d", maxBudget)
	}
	return strconv.Itoa(m)
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// runStudy runs one study of maxBudget trials answered from the truth and returns the
// hypervolume ratio after each trial that counts against the budget.
func runStudy(o *oracle, file string, v variant, seed, maxBudget int) ([]float64, error) {
	p, err := plan.Load(file, plan.LoadOptions{Vars: []string{"sampler=" + v.sampler,
		fmt.Sprintf("seed=%d", seed), fmt.Sprintf("prior=%t", v.prior)}})
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "searchbench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	measure := func(ctx context.Context, cfg plan.Config) (*workload.Measurement, error) {
		pt, ok := o.points[configText(cfg)]
		if !ok {
			return nil, fmt.Errorf("configuration %s is not one the rules allow", configText(cfg))
		}
		if v.parallel > 1 {
			// A stand-in for an engine's time, so that trials overlap.
			time.Sleep(20 * time.Millisecond)
		}
		if pt.startErr != nil {
			return nil, pt.startErr
		}
		return copyMeasurement(pt.m), nil
	}
	prior := func(cfg plan.Config) (search.Forecast, bool) {
		pt, ok := o.points[configText(cfg)]
		if !ok {
			return search.Forecast{}, false
		}
		return search.Forecast{Objectives: pt.prior, Violation: pt.priorViol, Margins: pt.priorSLO}, pt.priorOK
	}
	sum, err := search.Run(context.Background(), p, search.Options{Storage: filepath.Join(tmp, "study.db"),
		Trials: maxBudget, Parallel: v.parallel, Measure: measure, Prior: prior})
	if err != nil {
		return nil, err
	}
	trials := sum.Record.Trials
	sort.Slice(trials, func(i, j int) bool { return trials[i].Number < trials[j].Number })
	var curve []float64
	var found [][]float64
	for _, t := range trials {
		if t.OutsideBudget {
			continue
		}
		if t.State == record.StateComplete {
			vec := make([]float64, len(p.Objectives))
			for i, ob := range p.Objectives {
				vec[i] = t.Objectives[ob.Name]
			}
			found = append(found, record.Orient(vec, o.maximize))
		}
		curve = append(curve, o.hv(found)/o.trueHV)
	}
	if len(curve) == 0 {
		return nil, errors.New("the study measured nothing")
	}
	if verbose && seed == 1 {
		objs := make([]record.Objective, len(p.Objectives))
		for i, ob := range p.Objectives {
			objs[i] = record.Objective{Name: ob.Name, Maximize: ob.Maximize}
		}
		for i, t := range trials {
			if i >= maxBudget {
				break
			}
			st := ""
			if s, ok := record.TrialStanding(trials[:i+1], objs); ok {
				st = s.String()
			}
			fmt.Printf("  %s trial %d %s: %s %v | %s\n", v.name, t.Number, t.State, configText(plan.Config(t.Config)), t.Objectives, st)
		}
	}
	return curve, nil
}

// oracleFile is the JSON that scripts/optuna_bench.py reads.
type oracleFile struct {
	Space      string         `json:"space"`
	Truth      string         `json:"truth"`
	Seeds      int            `json:"seeds"`
	Budgets    []int          `json:"budgets"`
	Knobs      []oracleKnob   `json:"knobs"`
	Objectives []oracleObj    `json:"objectives"`
	Ideal      []float64      `json:"ideal"` // the true front's, minimisation form
	Nadir      []float64      `json:"nadir"`
	TrueHV     float64        `json:"true_hv"`
	Configs    []oracleConfig `json:"configs"`
}

type oracleKnob struct {
	Name string `json:"name"`
	// Kind is "list" (suggest_categorical over values), "int" or "float" (a range).
	Kind   string  `json:"kind"`
	Values []any   `json:"values"` // every value, in order (for a range too)
	Min    float64 `json:"min,omitempty"`
	Max    float64 `json:"max,omitempty"`
	Step   float64 `json:"step,omitempty"`
	Log    bool    `json:"log,omitempty"`
}

type oracleObj struct {
	Name     string `json:"name"`
	Maximize bool   `json:"maximize"`
}

type oracleConfig struct {
	// Index is each knob's value as an index into its values.
	Index      []int     `json:"index"`
	Objectives []float64 `json:"objectives,omitempty"` // the plan's orientation
	Feasible   bool      `json:"feasible"`
	Violation  float64   `json:"violation"`
	// Started is false when the engine cannot start it: frontier's memory pre-screen rejects
	// it outside the budget, and so does the script.
	Started bool `json:"started"`
}

func writeOracle(o *oracle, path string, seeds int, budgets []int) error {
	p := o.p
	f := oracleFile{Space: p.Study.Name + " / " + o.truth.name + " truth", Truth: o.truth.note, Seeds: seeds, Budgets: budgets,
		Ideal: o.lo, Nadir: o.hi, TrueHV: o.trueHV}
	index := make([]map[string]int, len(p.Knobs))
	for i, k := range p.Knobs {
		pts, finite := k.Points()
		if !finite {
			return fmt.Errorf("knob %q is continuous", k.Name)
		}
		ok := oracleKnob{Name: k.Name, Kind: "list"}
		if len(k.Values) == 0 {
			ok.Kind, ok.Min, ok.Max, ok.Step, ok.Log = "float", k.Min, k.Max, k.Step, k.Log
			if k.Kind == plan.KnobInt {
				ok.Kind = "int"
			}
		}
		index[i] = map[string]int{}
		for j, v := range pts {
			ok.Values = append(ok.Values, v)
			index[i][fmt.Sprint(v)] = j
		}
		f.Knobs = append(f.Knobs, ok)
	}
	for _, ob := range p.Objectives {
		f.Objectives = append(f.Objectives, oracleObj{ob.Name, ob.Maximize})
	}
	for _, key := range o.order {
		pt := o.points[key]
		c := oracleConfig{Objectives: pt.truth.Objectives, Feasible: pt.truth.Feasible,
			Violation: pt.truth.Violation, Started: pt.startErr == nil}
		for i, k := range p.Knobs {
			j, ok := index[i][fmt.Sprint(pt.cfg[k.Name])]
			if !ok {
				return fmt.Errorf("knob %q: value %v is not among its points", k.Name, pt.cfg[k.Name])
			}
			c.Index = append(c.Index, j)
		}
		f.Configs = append(f.Configs, c)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	js, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return os.WriteFile(path, js, 0o644)
}
