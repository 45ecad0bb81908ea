package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/frontier-llm/frontier/pressure"
	"github.com/frontier-llm/frontier/report"
	"github.com/frontier-llm/frontier/search"
	"github.com/frontier-llm/frontier/search/storage"
)

func cmdApply(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier apply", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	var pf planFlags
	pf.register(fs)
	storageURL := fs.String("storage", "", "study database `URL`: sqlite:///path.db, a file path, postgres://... or mysql://... (default: a SQLite file beside the plan, PLAN.db, or PLAN.estimate.db with --estimate)")
	trials := fs.Int("trials", 0, "top the study up to `N` trials (default: the plan's budget)")
	parallel := fs.Int("parallel", -1, "trials at once, `N`; 0: as many as free GPU slots allow (default: the plan's)")
	estimate := fs.Bool("estimate", false, "run every trial on the offline performance model instead of launching an engine")
	warm := fs.String("warm-start", "", "measure the best configurations of the study in `STORAGE` first")
	lease := fs.Duration("lease", 2*time.Minute, "how long a running trial may go without its worker's heartbeat before another worker takes it back, `DURATION` (at least 3s)")
	asJSON := fs.Bool("json", false, "print the study summary as JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier apply PLAN [--storage URL] [--trials N] [--parallel N] [--estimate] [--warm-start STORAGE] [--lease DURATION] [--json]")
		fmt.Fprintln(fs.Output(), "\nRuns a study: measures configurations until the budget is met, resuming a study the database")
		fmt.Fprintln(fs.Output(), "already holds. Exits 3 when no configuration meets every SLO, check and quality gate.")
		fs.PrintDefaults()
	}
	arg, err := parseOneArg(fs, args)
	if err != nil {
		return err
	}
	if *trials < 0 {
		return invalidf("--trials must be positive")
	}
	if *lease < minLease {
		return invalidf("--lease %s is too short: a worker beats once a second at most, so give it at least %s (the default is 2m)", *lease, minLease)
	}
	p, err := pf.loadAndWarn(c, arg)
	if err != nil {
		return err
	}
	sum, err := search.Run(ctx, p, search.Options{
		Storage:        *storageURL,
		Trials:         *trials,
		Parallel:       *parallel,
		Estimate:       *estimate,
		WarmStart:      *warm,
		Events:         newProgressView(c.stderr, isTerminal(c.stderr)).handle,
		FrontierBinary: frontierBinary(c),
		Environ:        c.environ,
		Version:        version(),
		StaleAfter:     *lease,
	})
	if errors.Is(err, storage.ErrEstimateMixed) {
		return mixedAdvice(arg, *estimate, *storageURL, err)
	}
	if err != nil {
		return err // exitCode knows which of search's errors are invalid input
	}
	if p.Pressure != nil && !*estimate && !sum.Interrupted && sum.Feasible > 0 {
		// The plan's pressure block runs after the search, on the configurations it picks.
		res, err := pressure.RunStudy(ctx, p, pressure.StudyRun{Storage: *storageURL, Study: sum.Study, FrontierBinary: frontierBinary(c), Progress: pressureProgress(c)})
		if err != nil {
			if ctx.Err() != nil {
				return runtimef("interrupted during the pressure experiments: the study's trials are stored, and so are the experiments that finished; run frontier pressure %s to measure the rest", report.Printable(arg))
			}
			return fmt.Errorf("pressure: %w", err)
		}
		if !*asJSON {
			if err := report.WritePressureText(c.stdout, res); err != nil {
				return err
			}
		}
	}
	if *asJSON {
		err = writeJSON(c, sum)
	} else {
		writeApplySummary(c, sum)
	}
	switch {
	case err != nil:
		return err
	case sum.ConfirmInterrupted:
		return runtimef("interrupted while confirming the front (%d confirmation runs done); run it again to confirm the rest", sum.ConfirmRuns)
	case sum.Interrupted:
		return runtimef("interrupted with %d of %d trials done; run it again to finish the budget", sum.Done, sum.Budget)
	case sum.Feasible == 0:
		return noFeasiblef("no configuration met every SLO, check and quality gate")
	}
	return nil
}

// minLease is the shortest --lease: three heartbeats of a second each.
const minLease = 3 * time.Second

// writeApplySummary prints where the study stands: trial counts, GPU time, and the front.
func writeApplySummary(c *cli, sum *search.Summary) {
	sim := ""
	if sum.Simulated {
		sim = " (simulated)"
	}
	fmt.Fprintf(c.stdout, "study %s%s: %d of %d trials in %s; this run measured %d\n", report.Printable(sum.Study), sim, sum.Done, sum.Budget, sum.Storage, sum.Measured)
	states := make([]string, 0, len(sum.States))
	for s := range sum.States {
		states = append(states, s)
	}
	sort.Strings(states)
	var parts []string
	for _, s := range states {
		parts = append(parts, fmt.Sprintf("%s %d", s, sum.States[s]))
	}
	fmt.Fprintf(c.stdout, "trials: %s\n", strings.Join(parts, ", "))
	if sum.PreScreened > 0 {
		fmt.Fprintf(c.stdout, "pre-screen: %d configuration(s) the engine could not start were rejected before launch, outside the budget\n", sum.PreScreened)
	}
	switch {
	case sum.CPUOnly:
		fmt.Fprintf(c.stdout, "engine time (CPU only, no GPU): %.1f s spent; saved %s by early stopping\n",
			sum.GPUSeconds, earlyStopSaving(sum, "s"))
	case sum.CPUEngineSeconds > 0:
		fmt.Fprintf(c.stdout, "GPU time: %.1f GPU-s spent, and %.1f s of engine time on the CPU only; saved %.1f by the memory pre-screen and %s by early stopping\n",
			sum.GPUSeconds-sum.CPUEngineSeconds, sum.CPUEngineSeconds, sum.SavedPreScreen, earlyStopSaving(sum, ""))
	default:
		fmt.Fprintf(c.stdout, "GPU time: %.1f GPU-s spent; saved %.1f GPU-s by the memory pre-screen and %s by early stopping\n",
			sum.GPUSeconds, sum.SavedPreScreen, earlyStopSaving(sum, "GPU-s"))
	}
	if sum.EarlyStopUnknown > 0 {
		fmt.Fprintf(c.stdout, "early stopping: what %s saved is unknown: they stopped before any trial had run to the end, so a full run's length was not known\n",
			count(sum.EarlyStopUnknown, "pruned trial"))
	}
	if len(sum.Repaired) > 0 {
		fmt.Fprintf(c.stdout, "repaired: trials %v were left running by a stopped process and were measured again\n", sum.Repaired)
	}
	if len(sum.ConfirmFailed) > 0 {
		fmt.Fprintf(c.stdout, "confirmation: trials %v left the front: a confirmation run missed an SLO, check or gate\n", sum.ConfirmFailed)
	}
	if len(sum.Unconfirmed) > 0 && !sum.ConfirmInterrupted {
		fmt.Fprintf(c.stdout, "confirmation: trials %v on the front are not confirmed (measured once; the plan's confirm sets how often a front configuration is measured again)\n", sum.Unconfirmed)
	}
	if len(sum.Front) == 0 {
		fmt.Fprintln(c.stdout, "front: no feasible configuration")
		return
	}
	fmt.Fprintf(c.stdout, "front (%d configurations):\n", len(sum.Front))
	var knobs []string
	if sum.Record != nil {
		knobs = sum.Record.Knobs
	}
	for _, f := range sum.Front {
		var cfg []string
		for _, k := range knobs {
			cfg = append(cfg, fmt.Sprintf("%s=%v", k, f.Config[k]))
		}
		var objs []string
		names := make([]string, 0, len(f.Objectives))
		for n := range f.Objectives {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			s := fmt.Sprintf("%s=%.4g", n, f.Objectives[n])
			if e, ok := f.Uncertainty[n]; ok && e.HalfWidth() > 0 {
				s += fmt.Sprintf(" [%.4g–%.4g]", e.Lo, e.Hi)
			}
			objs = append(objs, s)
		}
		runs := fmt.Sprintf("%d run(s)", f.Runs)
		if !f.Confirmed {
			runs += ", unconfirmed"
		}
		fmt.Fprintf(c.stdout, "  trial %d: %s | %s | %s\n", f.Number, strings.Join(cfg, " "), strings.Join(objs, " "), runs)
	}
	if sum.Record == nil {
		return
	}
	a := report.Analyze(sum.Record)
	if r := a.Recommended; r != nil {
		why := "the knee of the front"
		if r.Trial != r.Knee {
			why = fmt.Sprintf("the least costly of the configurations that tie with the knee, trial %d, within noise", r.Knee)
		}
		fmt.Fprintf(c.stdout, "recommended: trial %d, %s; frontier report shows why, with its evidence and headroom\n", r.Trial, why)
	}
}

// earlyStopSaving is the time early stopping saved, in unit: "unknown" when no pruned
// trial's saving could be estimated, and "at least" it when only some could.
func earlyStopSaving(sum *search.Summary, unit string) string {
	if unit != "" {
		unit = " " + unit
	}
	switch {
	case sum.EarlyStopUnknown > 0 && sum.SavedEarlyStop == 0:
		return "an unknown time"
	case sum.EarlyStopUnknown > 0:
		return fmt.Sprintf("at least %.1f%s", sum.SavedEarlyStop, unit)
	}
	return fmt.Sprintf("%.1f%s", sum.SavedEarlyStop, unit)
}

// frontierBinary is the frontier executable that serves the simulator: FRONTIER_BINARY when
// set, else the program as it was invoked (so a frontier reached through a link is run the
// same way), else os.Executable().
func frontierBinary(c *cli) string {
	if bin := c.getenv("FRONTIER_BINARY"); bin != "" {
		return bin
	}
	if len(os.Args) > 0 && filepath.Base(os.Args[0]) == "frontier" {
		if strings.ContainsRune(os.Args[0], filepath.Separator) {
			if abs, err := filepath.Abs(os.Args[0]); err == nil {
				return abs
			}
		} else if p, err := exec.LookPath(os.Args[0]); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				return abs
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// mixedAdvice adds to err, a refusal to mix estimates and measurements in one study, what
// to run instead: the default storage keeps the two apart.
func mixedAdvice(planArg string, estimate bool, storageURL string, err error) error {
	plan := report.Printable(planArg)
	if estimate {
		return fmt.Errorf("%w. Estimate into a study of its own: frontier apply %s --estimate (by default in %s), or give another --storage",
			err, plan, report.Printable(storage.DefaultEstimateStorage(planArg)))
	}
	return fmt.Errorf("%w. Measure into a study of its own: frontier apply %s (by default in %s; estimates go to %s), or give another --storage; to add estimates to this study instead, run frontier apply %s --estimate --storage %s",
		err, plan, report.Printable(storage.DefaultStorage(planArg)), report.Printable(storage.DefaultEstimateStorage(planArg)), plan, report.Printable(storage.RedactURL(storageURL)))
}
