package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/record"
)

// pressureBlock is a short ladder, then a restart whose engine takes the simulated model's
// load time (about 2.3 s for Llama 3.1 8B) to come back.
const pressureBlock = `
pressure {
  budget = "60s"
  ladder {
    start     = 1
    factor    = 2
    past      = 0
    refine    = 0
    duration  = "0s"
    max_steps = 2
    mix       = false
  }
  restart {
    before = "2s"
    after  = "10s"
  }
}
`

// pressureSignalCase runs a one-trial study, then `frontier pressure` on its knee, and sends
// SIGINT 3 s into the restart experiment, while the killed engine is loading its weights
// again: frontier must stop within ten seconds, keep the ladder it measured, say the restart
// was interrupted, and leave neither engine running.
func pressureSignalCase(t *testing.T, dir, mk string) relRow {
	path := writePlan(t, dir, relPlan{Model: mk, Trials: 1, Requests: 24})
	if r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db"); r.code != 0 {
		t.Fatalf("apply exited %d; stderr:\n%s", r.code, r.stderr)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(src, pressureBlock...), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startFrontier(t, dir, nil, "pressure", "plan.hcl", "--storage", "study.db")
	r.await(t, `pressure: restart`, 2*time.Minute)
	time.Sleep(3 * time.Second)
	sent := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	res := r.wait(t, 30*time.Second)
	when := "stopped within 10 s"
	if took := time.Since(sent); took > 10*time.Second {
		when = fmt.Sprintf("took %v to stop", took.Round(time.Second))
	}
	row := relRow{Exit: res.code, Saw: when + ": " + saw(res.stderr, "interrupted: the experiments finished before the signal are stored, the one it cut short is not; run it again to measure it"), Left: left(mk, res.pid)}
	row.Stored = pressureSummary(study(t, filepath.Join(dir, "study.db")))
	return row
}

// pressureSummary says, per stored pressure result, which experiments it kept and why the
// others are missing.
func pressureSummary(rec *record.Study) string {
	if len(rec.Pressure) == 0 {
		return "no pressure result"
	}
	var parts []string
	for _, p := range rec.Pressure {
		var kept []string
		for _, l := range p.Ladders {
			kept = append(kept, fmt.Sprintf("ladder of %s (%d steps)", l.Class, len(l.Steps)))
		}
		for _, ep := range []*record.Episode{p.Burst, p.Restart, p.Shift} {
			if ep != nil {
				kept = append(kept, ep.Kind)
			}
		}
		s := fmt.Sprintf("pressure of trial %d: %s", p.Trial, strings.Join(kept, ", "))
		for _, e := range p.Errors {
			if i := strings.Index(e, ";"); i > 0 {
				e = e[:i]
			}
			s += "; " + e
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}
