package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/search"
)

func TestApplySummarySaysWhenTheEarlyStopSavingIsUnknown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sum   search.Summary
		wants []string
	}{
		{"every pruned trial ran before any completed", search.Summary{GPUSeconds: 12, EarlyStopUnknown: 2},
			[]string{"and an unknown time by early stopping", "early stopping: what 2 pruned trials saved is unknown"}},
		{"some estimated", search.Summary{GPUSeconds: 12, SavedEarlyStop: 30, EarlyStopUnknown: 1},
			[]string{"and at least 30.0 GPU-s by early stopping", "what 1 pruned trial saved is unknown"}},
		{"all estimated", search.Summary{GPUSeconds: 12, SavedEarlyStop: 30},
			[]string{"and 30.0 GPU-s by early stopping"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			writeApplySummary(&cli{stdout: &out}, &tc.sum)
			for _, w := range tc.wants {
				if !strings.Contains(out.String(), w) {
					t.Errorf("summary does not say %q:\n%s", w, out.String())
				}
			}
			if tc.sum.EarlyStopUnknown > 0 && strings.Contains(out.String(), "and 0.0 GPU-s by early stopping") {
				t.Errorf("summary claims a saving of 0:\n%s", out.String())
			}
		})
	}
}
