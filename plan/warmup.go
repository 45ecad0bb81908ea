package plan

import (
	"fmt"

	"github.com/frontier-llm/frontier/workload"
)

// This file holds a workload's warm-up: the default that keeps a closed loop's start-up wave
// out of the measurement, the note that says so, and the warning for a warm-up too short to.

// warmup sets c.Warmup: the plan's when it sets one, else the class's start-up wave. It adds
// the note that explains a default, and warns when the plan's warm-up leaves part of a
// closed loop's start-up wave in the measurement. c's arrival and size must be decoded.
func (d *decoder) warmup(a *attrs, c *workload.Class) {
	unit, n := "requests", c.Requests
	if c.Conversations > 0 {
		unit, n = "conversations", c.Conversations
	}
	wave := startupWave(c)
	if !a.has("warmup") {
		c.Warmup = wave
		switch {
		case wave > 0:
			d.notes = append(d.notes, fmt.Sprintf("workload %q: warm-up %d %s: the closed loop's start-up wave (concurrency %d); set warmup to change it",
				c.Name, wave, unit, c.Arrival.Concurrency))
		case c.Arrival.Kind == workload.ArrivalImmediate:
			d.notes = append(d.notes, fmt.Sprintf("workload %q: no warm-up: immediate() sends every %s at once, so the whole run is one start-up wave, measured as such",
				c.Name, singular(unit)))
		}
		return
	}
	c.Warmup = int(a.atLeast("warmup", 0, 0))
	if c.Warmup >= wave || a.diags.HasErrors() || n == 0 {
		return
	}
	measured := min(wave-c.Warmup, n)
	first := "they"
	if c.Conversations > 0 {
		first = "their first turns"
	}
	a.diags = a.diags.Append(warningAt(a.rangeOf("warmup"), "Warm-up shorter than the start-up wave",
		"Workload %q keeps %d %s in flight with warmup = %d, so %d of its %d measured %s (%.0f%%) are the start-up wave: sent all at once when the run starts, %s queue behind each other's prefills and raise the time to first token above what the server does in steady state. Set warmup = %d, or remove warmup: a closed loop's first %d %s are warm-up by default.",
		c.Name, c.Arrival.Concurrency, unit, c.Warmup, measured, n, unit, 100*float64(measured)/float64(n), first, wave, wave, unit))
}

// startupWave is how many of a class's sessions (requests, or conversations) start at once
// when its run starts and wait for each other: a closed loop's concurrency; 0 for open-loop
// arrivals, which send on a schedule, and for immediate(), whose every request starts at
// once (warm-up requests with them, so none could take the wave away).
func startupWave(c *workload.Class) int {
	if c.Arrival.Kind == workload.ArrivalConcurrency {
		return max(c.Arrival.Concurrency, 1)
	}
	return 0
}

// singular is unit without its plural s.
func singular(unit string) string {
	return unit[:len(unit)-1]
}
