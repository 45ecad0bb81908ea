package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search/storage"

	"github.com/frontier-llm/frontier/plan"
)

// workerEnv makes the test binary a study worker: a separate process running Run, as
// `frontier apply` on another host would. Its arguments are in the environment.
const workerEnv = "FRONTIER_SEARCH_TEST_WORKER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(workerEnv); spec != "" {
		os.Exit(worker(spec))
	}
	os.Exit(m.Run())
}

// workerSpec is what a worker process runs.
type workerSpec struct {
	Plan    string   `json:"plan"`
	Vars    []string `json:"vars"`
	Storage string   `json:"storage"`
	Trials  int      `json:"trials"`
}

func worker(raw string) int {
	var ws workerSpec
	if err := json.Unmarshal([]byte(raw), &ws); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p, err := plan.Load(ws.Plan, plan.LoadOptions{Vars: ws.Vars})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sum, err := Run(context.Background(), p, Options{Storage: ws.Storage, Trials: ws.Trials, Estimate: true, Parallel: 1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := json.NewEncoder(os.Stdout).Encode(sum); err != nil {
		return 2
	}
	return 0
}

// startWorkers runs n worker processes on one study and returns their summaries.
func startWorkers(t *testing.T, n int, ws workerSpec) []Summary {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(ws.Plan)
	if err != nil {
		t.Fatal(err)
	}
	ws.Plan = abs
	spec, err := json.Marshal(ws)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		out []byte
		err error
		i   int
	}
	results := make(chan result, n)
	for i := 0; i < n; i++ {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), workerEnv+"="+string(spec))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		go func(i int) {
			out, err := cmd.Output()
			if err != nil {
				err = fmt.Errorf("%w: %s", err, stderr.String())
			}
			results <- result{out, err, i}
		}(i)
	}
	sums := make([]Summary, n)
	for i := 0; i < n; i++ {
		r := <-results
		if r.err != nil {
			t.Fatalf("worker %d: %v", r.i, r.err)
		}
		if err := json.Unmarshal(r.out, &sums[r.i]); err != nil {
			t.Fatalf("worker %d printed %q: %v", r.i, r.out, err)
		}
	}
	return sums
}

// checkExactBudget checks that a study holds exactly budget finished trials, numbered 0 to
// budget-1, with no configuration twice, and that the workers measured budget trials in all.
func checkExactBudget(t *testing.T, p *plan.Plan, storageURL string, budget int, sums []Summary) {
	t.Helper()
	rec, err := storage.Load(context.Background(), storageURL, "")
	if err != nil {
		t.Fatal(err)
	}
	counted := 0
	seen := map[int]bool{}
	for _, tr := range rec.Trials {
		if !tr.OutsideBudget {
			counted++
		}
		if seen[tr.Number] || tr.Number < 0 || tr.Number >= len(rec.Trials) {
			t.Errorf("trial number %d repeated or out of range", tr.Number)
		}
		seen[tr.Number] = true
		switch tr.State {
		case record.StateComplete, record.StateInfeasible, record.StatePruned:
		default:
			t.Errorf("trial %d is %s: %s", tr.Number, tr.State, tr.Reason)
		}
	}
	if counted != budget {
		t.Errorf("the study holds %d trials that count against the budget; want exactly %d", counted, budget)
	}
	sp, err := newSpace(p.Knobs)
	if err != nil {
		t.Fatal(err)
	}
	configKeys(t, sp, rec)
	measured := 0
	for _, s := range sums {
		measured += s.Measured
	}
	if measured != budget {
		t.Errorf("the workers measured %d trials in all; want %d (none twice)", measured, budget)
	}
}
