package hw

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	noNVML := Inventory{Reason: "NVML is not available (nvml: libnvidia-ml.so.1 not found): no NVIDIA driver or GPU was found on this host", Host: "h", GPUs: []GPU{}}
	tests := []struct {
		name         string
		sel          Selection
		host         string // a testdata/nvml host, or "" for no NVML
		real         bool
		want         []int
		wantWarnings int
		wantErr      error
		errContains  string
	}{
		{name: "all with NVML", sel: Selection{All: true}, host: "4xa100-pcie-bridged", real: true, want: []int{0, 1, 2, 3}},
		{name: "indices with NVML", sel: Selection{Indices: []int{3, 1}}, host: "4xa100-pcie-bridged", real: true, want: []int{3, 1}},
		{name: "unknown index", sel: Selection{Indices: []int{0, 7}}, host: "4xa100-pcie-bridged", real: true,
			wantErr: ErrUnknownGPU, errContains: "hardware.gpus = [0, 7]: no such GPU 7; NVML sees GPUs 0, 1, 2, 3"},
		{name: "count prefers idle GPUs", sel: Selection{Count: 3}, host: "hgx-4xh100-nvswitch", real: true, want: []int{0, 2, 3}},
		{name: "count too large", sel: Selection{Count: 2}, host: "1xl4", real: true, wantErr: ErrTooFewGPUs},
		{name: "indices without NVML are trusted with a warning", sel: Selection{Indices: []int{0, 1}}, real: true,
			want: []int{0, 1}, wantWarnings: 1},
		{name: "count without NVML is the first indices", sel: Selection{Count: 2}, real: true, want: []int{0, 1}, wantWarnings: 1},
		{name: "all without NVML is an error for a real engine", sel: Selection{All: true}, real: true,
			wantErr: ErrNVMLUnavailable, errContains: "list the GPU indices to use, e.g. gpus = [0, 1]"},
		{name: "simulator indices without NVML, no warning", sel: Selection{Indices: []int{0, 1}}, want: []int{0, 1}},
		{name: "simulator all without NVML", sel: Selection{All: true}, wantErr: ErrNVMLUnavailable, errContains: "gpus = 8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inv := noNVML
			if tc.host != "" {
				inv = DetectWith(loadRecorded(t, tc.host), "h")
			}
			gpus, warnings, err := Resolve(tc.sel, inv, tc.real)
			if tc.wantErr != nil || tc.errContains != "" {
				if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) || !strings.Contains(err.Error(), tc.errContains) {
					t.Fatalf("Resolve error = %v, want %v containing %q", err, tc.wantErr, tc.errContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, indices(gpus)); diff != "" {
				t.Errorf("GPUs (-want +got):\n%s", diff)
			}
			if len(warnings) != tc.wantWarnings {
				t.Errorf("warnings = %q, want %d", warnings, tc.wantWarnings)
			}
			for _, w := range warnings {
				if !strings.Contains(w, "trusting hardware.gpus") || !strings.Contains(w, "NVML is not available") {
					t.Errorf("warning does not say what is trusted and why: %q", w)
				}
			}
		})
	}
}

func TestSelectionConvertsFromThePlan(t *testing.T) {
	t.Parallel()
	// plan.GPUSelection has these fields in this order; hw must not import plan.
	type planSelection struct {
		All     bool
		Count   int
		Indices []int
	}
	got := Selection(planSelection{Indices: []int{0, 2}}).String()
	if diff := cmp.Diff("[0, 2]", got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestWaitReleased(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	tests := []struct {
		name    string
		during  func(lib *recordedLibrary) // what the devices report while the engine is stopping
		after   func(lib *recordedLibrary) // what they report later, or nil if never released
		wantErr error
	}{
		{
			name:   "released once the engine's process is gone",
			during: func(lib *recordedLibrary) { lib.setUsage(0, 5*gib, []Process{{PID: 999, UsedMemoryBytes: 70 * gib}}) },
			after:  func(lib *recordedLibrary) { lib.setUsage(0, 79*gib, nil) },
		},
		{
			name:    "memory not back without a visible process",
			during:  func(lib *recordedLibrary) { lib.setUsage(0, 5*gib, nil) },
			wantErr: ErrMemoryNotReleased,
		},
		{
			name:   "another user's process is not waited for",
			during: func(lib *recordedLibrary) {},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lib := loadRecorded(t, "hgx-4xh100-nvswitch")
			inv := DetectWith(lib, "h")
			slot := []GPU{inv.GPUs[0], inv.GPUs[1]} // GPU 1 has another user's process
			tc.during(lib)
			if tc.after != nil {
				go func() {
					time.Sleep(30 * time.Millisecond)
					tc.after(lib)
				}()
			}
			err := WaitReleased(context.Background(), lib, slot, 300*time.Millisecond, 5*time.Millisecond)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("waitReleased = %v, want %v", err, tc.wantErr)
			}
		})
	}
}
