package plan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/frontier-llm/frontier/workload"
)

// sampleWarnings warns about each percentile SLO of c that its measured requests cannot pin:
// a percentile needs about workload.TailSamples requests beyond it (workload.SamplesFor),
// or one or two slow requests decide whether the SLO is met. ranges[i] is where c.SLO[i] is
// written. Pooled inter-token gaps (itl) are left out: every request adds many of them.
func sampleWarnings(c *workload.Class, ranges []hcl.Range) hcl.Diagnostics {
	n := measuredRequests(c)
	type short struct {
		p        float64
		keys     []string
		families []string
		rng      hcl.Range
	}
	var shorts []*short // by percentile, in the order the SLOs are written
	for i, b := range c.SLO {
		family, p, ok := percentileOf(b.Metric)
		if !ok || family == "itl" || n <= 0 || n >= workload.SamplesFor(p) {
			continue
		}
		key := strings.TrimSuffix(b.Metric, "_ms")
		if b.AtLeast {
			key = "min_" + b.Metric
		}
		j := slices.IndexFunc(shorts, func(s *short) bool { return s.p == p })
		if j < 0 {
			shorts = append(shorts, &short{p: p, rng: ranges[i]})
			j = len(shorts) - 1
		}
		shorts[j].keys = append(shorts[j].keys, key)
		shorts[j].families = append(shorts[j].families, family)
	}
	var diags hcl.Diagnostics
	for _, s := range shorts {
		pct := "p" + strconv.FormatFloat(s.p, 'f', -1, 64)
		need := workload.SamplesFor(s.p)
		r := workload.RanksOf(n, s.p)
		slos, met := "SLO "+s.keys[0], "it is"
		if len(s.keys) > 1 {
			slos, met = "SLOs "+strings.Join(s.keys, " and "), "they are"
		}
		diags = diags.Append(warningAt(s.rng, "Too few requests for a "+pct+" SLO",
			"Workload %q measures %s, too few to pin its %s: with %d requests, %s is the %s value and its 95%% interval spans from the %s to the %s, so a few slow requests decide whether %s met. A %s needs about %d requests (%d beyond it): %s%s.",
			c.Name, measuredText(c, n), slos, n, pct, ordinalFromTop(r.Rank), ordinalFromTop(r.Low), ordinalFromTop(r.High),
			met, pct, need, workload.TailSamples, raiseText(c, need), lowerText(s.families[0], s.p, n)))
	}
	return diags
}

// measuredRequests is how many requests of c are measured, warm-up aside: each turn of a
// conversation is a request (its mean number of turns, for a class of conversations).
func measuredRequests(c *workload.Class) int {
	if c.Conversations > 0 {
		return int(math.Round(float64(c.Conversations) * c.RequestsPerSession()))
	}
	return c.Requests
}

// measuredText says how many requests c measures, in the plan's terms.
func measuredText(c *workload.Class, n int) string {
	if c.Conversations > 0 {
		return fmt.Sprintf("%d conversations of %s turns, about %d requests", c.Conversations, turnsText(c.Turns), n)
	}
	return fmt.Sprintf("%d requests", n)
}

// raiseText says what size of c measures need requests.
func raiseText(c *workload.Class, need int) string {
	if c.Conversations > 0 {
		return fmt.Sprintf("set conversations = %d", int(math.Ceil(float64(need)/c.RequestsPerSession())))
	}
	return fmt.Sprintf("set requests = %d", need)
}

// lowerText suggests the highest percentile of family below p that n requests pin, when
// there is a metric for it.
func lowerText(family string, p float64, n int) string {
	for _, lower := range []float64{95, 90, 50} {
		metric := fmt.Sprintf("%s_p%g_ms", family, lower)
		if lower < p && workload.IsMetric(metric) && n >= workload.SamplesFor(lower) {
			return fmt.Sprintf(", or bound a lower percentile such as %s_p%g (%d requests pin it)", family, lower, workload.SamplesFor(lower))
		}
	}
	return ""
}

// percentileOf splits a percentile metric, "ttft_p99_ms", into its family ("ttft") and
// percentile (99); ok is false for any other metric.
func percentileOf(metric string) (family string, p float64, ok bool) {
	rest, found := strings.CutSuffix(metric, "_ms")
	if !found {
		return "", 0, false
	}
	i := strings.LastIndex(rest, "_p")
	if i < 0 {
		return "", 0, false
	}
	p, err := strconv.ParseFloat(rest[i+2:], 64)
	if err != nil || p <= 0 || p >= 100 {
		return "", 0, false
	}
	return rest[:i], p, true
}

// ordinalFromTop names the value of rank r from the top: "largest", "2nd-largest", ...
func ordinalFromTop(r int) string {
	if r <= 1 {
		return "largest"
	}
	suffix := "th"
	switch {
	case r%100 >= 11 && r%100 <= 13:
	case r%10 == 1:
		suffix = "st"
	case r%10 == 2:
		suffix = "nd"
	case r%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s-largest", r, suffix)
}
