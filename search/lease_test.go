package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/search/storage"
)

// TestStaleOwnersByHostPidAndHeartbeat checks which running trials a worker takes back: on
// its own host, those of a process that is gone and those held under its own pid by an
// earlier process (a container restarted under its host name, frontier its first process
// again); anywhere, those whose heartbeat is older than the lease.
func TestStaleOwnersByHostPidAndHeartbeat(t *testing.T) {
	t.Parallel()
	const lease = 10 * time.Second
	r := &runner{host: "job-0", pid: os.Getpid(), opts: Options{StaleAfter: lease}}
	r.owner = fmt.Sprintf("job-0/%d/200", r.pid)
	fresh, old := time.Now().Add(-time.Second), time.Now().Add(-2*lease)
	parent := os.Getppid() // a live process of this host
	tests := []struct {
		name  string
		owner string
		beat  time.Time
		want  bool
	}{
		{"this process", r.owner, old, false},
		{"an earlier process under this host name and pid", fmt.Sprintf("job-0/%d/100", r.pid), fresh, true},
		{"a live process of this host", fmt.Sprintf("job-0/%d/100", parent), fresh, false},
		{"a live process of this host, silent past the lease", fmt.Sprintf("job-0/%d/100", parent), old, true},
		{"a process of this host that is gone", "job-0/999999999/100", fresh, true},
		{"another host, beating", fmt.Sprintf("job-1/%d/100", r.pid), fresh, false},
		{"another host, silent past the lease", fmt.Sprintf("job-1/%d/100", r.pid), old, true},
		{"another host, never beat", "job-1/7/100", time.Time{}, true},
	}
	for _, tc := range tests {
		if got := r.isStale(tc.owner, tc.beat); got != tc.want {
			t.Errorf("%s (%s): stale %v, want %v", tc.name, tc.owner, got, tc.want)
		}
	}
}

// TestAWorkerWaitsForAnotherProcesssTrialAndTakesItBackAfterTheLease gives a study a
// running trial held by a process of another host, which beats until the worker says it is
// waiting for it and then stops (a pod lost with its node). A worker that has measured the
// rest of the budget does not exit: it waits, takes the trial back once the lease has passed
// since the last beat, measures it and then exits, with the budget met exactly. SQLite here;
// the same over PostgreSQL in cmd/frontier's Job test.
func TestAWorkerWaitsForAnotherProcesssTrialAndTakesItBackAfterTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := loadPlan(t, "estimate.hcl")
	db := filepath.Join(t.TempDir(), "study.db")
	const lease = 3 * time.Second
	if _, err := Run(ctx, p, Options{Storage: db, Trials: 2, Estimate: true, StaleAfter: lease}); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(ctx, db, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.LoadRecord(studyIDOf(t, st, p), p.Study.Name)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := newSpace(p.Knobs)
	if err != nil {
		t.Fatal(err)
	}
	tried := configKeys(t, sp, rec)
	var cfg plan.Config
	for i := 0; cfg == nil; i++ {
		c, err := p.GridAt(i)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := p.CheckRules(c); len(v) == 0 && tried[configKey(c)] == 0 {
			cfg = c
		}
	}
	nt, err := (&runner{sp: sp}).newTrial(cfg, configKey(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	other, status, err := st.ClaimNew(studyIDOf(t, st, p), 3, nt, "another-host/1/1")
	if err != nil || status != storage.Claimed {
		t.Fatalf("claim for another host: %v, status %v", err, status)
	}
	defer st.Close()
	// The other host's process: alive, beating, until the worker waits for it.
	waiting := make(chan struct{})
	stopBeating := sync.OnceFunc(func() { close(waiting) })
	beats := make(chan time.Time, 1)
	go func() {
		last := time.Now()
		defer func() { beats <- last }()
		giveUp := time.After(time.Minute) // a worker that never waits fails below, not by hanging
		for {
			select {
			case <-waiting:
				return
			case <-giveUp:
				return
			case <-time.After(200 * time.Millisecond):
				if err := st.Heartbeat(other.TrialID); err == nil {
					last = time.Now()
				}
			}
		}
	}()

	var mu sync.Mutex
	var notes []string
	var takenBack time.Time
	sum, err := Run(ctx, p, Options{Storage: db, Trials: 4, Estimate: true, StaleAfter: lease, Events: func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind != EventNote {
			return
		}
		notes = append(notes, e.Message)
		switch {
		case strings.Contains(e.Message, "waiting while other workers measure"):
			stopBeating()
		case strings.Contains(e.Message, fmt.Sprintf("trial %d was left running", other.Number)):
			takenBack = time.Now()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	lastBeat := <-beats
	if gap := takenBack.Sub(lastBeat); gap < lease-200*time.Millisecond {
		t.Errorf("the trial was taken back %v after its process's last beat, within the lease of %v", gap, lease)
	}
	if diff := cmp.Diff([]int{other.Number}, sum.Repaired); diff != "" {
		t.Errorf("trials taken back (-want +got):\n%s", diff)
	}
	if sum.Done != 4 || sum.Trials != 4 || sum.States["complete"]+sum.States["infeasible"] != 4 {
		t.Errorf("the study holds %d trials, %d done, states %v; want 4 done", sum.Trials, sum.Done, sum.States)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "waiting while other workers measure 1 trial(s)") }) {
		t.Errorf("no note says the worker waits; notes: %q", notes)
	}
}

func studyIDOf(t *testing.T, st *storage.Store, p *plan.Plan) int {
	t.Helper()
	id, ok, err := st.StudyID(p.Study.Name)
	if err != nil || !ok {
		t.Fatalf("study %q: %v", p.Study.Name, err)
	}
	return id
}
