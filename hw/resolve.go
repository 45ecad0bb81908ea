package hw

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors of Resolve.
var (
	// ErrNVMLUnavailable means the selection needs NVML and NVML is not available.
	ErrNVMLUnavailable = errors.New("NVML is not available")
	// ErrUnknownGPU means the selection names a GPU index NVML does not see.
	ErrUnknownGPU = errors.New("no such GPU")
)

// Selection says which GPUs a study may use: all of them, a count, or explicit indices. It
// has the fields of the plan's hardware.gpus, so plan.GPUSelection converts to it.
type Selection struct {
	All     bool
	Count   int
	Indices []int
}

// String renders the selection as a plan writes it.
func (s Selection) String() string {
	switch {
	case s.All:
		return `"all"`
	case len(s.Indices) > 0:
		parts := make([]string, len(s.Indices))
		for i, x := range s.Indices {
			parts[i] = fmt.Sprint(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		return fmt.Sprint(s.Count)
	}
}

// Resolve returns the GPUs a study may use, for a real engine (vllm, ollama on a GPU) when
// realEngine is true. With NVML, the selection is checked against inv: every index must
// exist, and a count picks that many GPUs, idle ones and lower indices first. Without NVML, a
// list of indices (or a count, read as the first indices) is trusted with a warning, and the
// GPUs returned carry only their index; "all" is an error for a real engine, since nothing
// says what "all" is. For the simulator (realEngine false) use VirtualGPUs; Resolve then only
// checks the selection against NVML where NVML is available, and otherwise returns GPUs that
// carry only their index, without warnings.
func Resolve(sel Selection, inv Inventory, realEngine bool) ([]GPU, []string, error) {
	if !inv.Available {
		return resolveWithoutNVML(sel, inv, realEngine)
	}
	switch {
	case sel.All:
		if len(inv.GPUs) == 0 {
			return nil, nil, fmt.Errorf("hardware.gpus = %s: NVML sees no GPUs on %s", sel, inv.Host)
		}
		return slices.Clone(inv.GPUs), nil, nil
	case len(sel.Indices) > 0:
		out := make([]GPU, 0, len(sel.Indices))
		for _, i := range sel.Indices {
			g, ok := findGPU(inv.GPUs, i)
			if !ok {
				return nil, nil, fmt.Errorf("hardware.gpus = %s: %w %d; NVML sees %s", sel, ErrUnknownGPU, i, describeIndices(inv.GPUs))
			}
			out = append(out, g)
		}
		return out, nil, nil
	case sel.Count > 0:
		if sel.Count > len(inv.GPUs) {
			return nil, nil, fmt.Errorf("hardware.gpus = %s: %w: NVML sees %s", sel, ErrTooFewGPUs, describeIndices(inv.GPUs))
		}
		byIdle := slices.Clone(inv.GPUs)
		slices.SortStableFunc(byIdle, func(a, b GPU) int { return len(a.Processes) - len(b.Processes) })
		out := byIdle[:sel.Count]
		slices.SortFunc(out, func(a, b GPU) int { return a.Index - b.Index })
		return out, nil, nil
	}
	return nil, nil, fmt.Errorf("hardware.gpus: give \"all\", a count or a list of indices")
}

func resolveWithoutNVML(sel Selection, inv Inventory, realEngine bool) ([]GPU, []string, error) {
	reason := inv.Reason
	if reason == "" {
		reason = "NVML is not available"
	}
	var indices []int
	switch {
	case sel.All:
		if realEngine {
			return nil, nil, fmt.Errorf("hardware.gpus = \"all\": %w here (%s), so frontier cannot tell which GPUs exist; "+
				"list the GPU indices to use, e.g. gpus = [0, 1], or install the NVIDIA driver, or use engine \"sim\" to simulate a GPU you do not have",
				ErrNVMLUnavailable, reason)
		}
		return nil, nil, fmt.Errorf("hardware.gpus = \"all\": %w here (%s); give the simulator a count of GPUs, e.g. gpus = 8", ErrNVMLUnavailable, reason)
	case len(sel.Indices) > 0:
		indices = slices.Clone(sel.Indices)
	case sel.Count > 0:
		for i := 0; i < sel.Count; i++ {
			indices = append(indices, i)
		}
	default:
		return nil, nil, fmt.Errorf("hardware.gpus: give \"all\", a count or a list of indices")
	}
	out := make([]GPU, len(indices))
	for i, x := range indices {
		out[i] = GPU{Index: x, Processes: []Process{}}
	}
	if !realEngine {
		return out, nil, nil
	}
	warn := fmt.Sprintf("%s; trusting hardware.gpus = %s as GPU indices %v: frontier cannot check that they exist or are idle, "+
		"and cannot wait for their memory to be released between trials", reason, sel, indices)
	return out, []string{warn}, nil
}

func findGPU(gpus []GPU, index int) (GPU, bool) {
	for _, g := range gpus {
		if g.Index == index {
			return g, true
		}
	}
	return GPU{}, false
}

// describeIndices says which GPUs exist, e.g. "GPUs 0, 1, 2" or "no GPUs".
func describeIndices(gpus []GPU) string {
	if len(gpus) == 0 {
		return "no GPUs"
	}
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = fmt.Sprint(g.Index)
	}
	if len(gpus) == 1 {
		return "only GPU " + parts[0]
	}
	return "GPUs " + strings.Join(parts, ", ")
}
