package vllm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Setting is one knob value handed to `vllm serve`, in the plan's declaration order.
type Setting struct {
	Name  string
	Value any // int64, int, float64, string, bool, []any or map[string]any
}

// settingNameRE is what a knob name may look like to become a flag.
var settingNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.]*$`)

// KnobArgs turns knob settings into `vllm serve` flags, in order: the one mapping from a
// trial's knobs to vLLM's command line, which the launcher runs and an export of a trial
// without a recorded command writes. A setting x_y is --x-y VALUE; a boolean is what v's
// argparse takes (Version.BoolArgs: --x-y for true; for false --no-x-y for a
// BooleanOptionalAction flag and nothing for a store_true switch), or --x-y / --no-x-y when
// v is nil; quantization "none" is no flag at all; a list is --x-y V1 V2; a map is --x-y
// JSON; kv_offloading_size 0 (no KV offloading, a value a search space needs) is no flag,
// and takes kv_offloading_backend with it: vLLM up to v0.13 refuses the backend without a
// size, and later lines take 0 as a size, which beside a NIXL connector fails at start-up.
func KnobArgs(v *Version, settings []Setting) ([]string, error) {
	var out []string
	noOffload := false
	for _, s := range settings {
		if s.Name == "kv_offloading_size" && isZero(s.Value) {
			noOffload = true
		}
	}
	for _, s := range settings {
		if !settingNameRE.MatchString(s.Name) {
			return nil, fmt.Errorf("knob %q: not a valid engine option name", s.Name)
		}
		if noOffload && (s.Name == "kv_offloading_size" || s.Name == "kv_offloading_backend") {
			continue
		}
		args, err := knobArgs(v, s)
		if err != nil {
			return nil, fmt.Errorf("knob %q: %w", s.Name, err)
		}
		out = append(out, args...)
	}
	return out, nil
}

// knobArgs is one setting's arguments.
func knobArgs(v *Version, s Setting) ([]string, error) {
	flag := "--" + strings.ReplaceAll(s.Name, "_", "-")
	switch x := s.Value.(type) {
	case bool:
		switch {
		case v != nil:
			return v.BoolArgs(flag, x), nil
		case x:
			return []string{flag}, nil
		}
		return []string{"--no-" + flag[2:]}, nil
	case string:
		if s.Name == "quantization" && x == "none" {
			return nil, nil
		}
		return []string{flag, x}, nil
	case []any:
		out := []string{flag}
		for _, e := range x {
			str, err := FormatValue(e)
			if err != nil {
				return nil, err
			}
			out = append(out, str)
		}
		return out, nil
	case map[string]any:
		b, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		return []string{flag, string(b)}, nil
	}
	str, err := FormatValue(s.Value)
	if err != nil {
		return nil, err
	}
	return []string{flag, str}, nil
}

// isZero reports whether a knob value is the number 0.
func isZero(v any) bool {
	switch x := v.(type) {
	case int:
		return x == 0
	case int64:
		return x == 0
	case float64:
		return x == 0
	}
	return false
}

// FormatValue renders a scalar knob value as a command-line argument: a float without an
// exponent (2e10 is 20000000000), as vLLM's argparse reads it.
func FormatValue(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("value %v of type %T is not an int, float, string or bool", v, v)
}

// kvRolesSince is the first line whose NixlConnector wants an explicit role per instance:
// kv_both was deprecated for it on 2026-06-05 (vLLM #43874, after the RFC #43807), and the
// connector logs a warning asking for kv_producer on prefill instances and kv_consumer on
// decode instances. The change falls after the v0.22 table; like every rule after v0.22 it
// is placed at v0.28, the line of the pinned commit that has it (table.go).
const kvRolesSince = "0.28"

// KVRole is the kv_role of a prefill (prefill true) or decode instance of a disaggregated
// deployment with the NixlConnector on this line: kv_producer and kv_consumer from v0.28,
// kv_both (each instance able to send and receive, as vLLM's examples gave it) before.
func (v *Version) KVRole(prefill bool) string {
	switch {
	case before(v.Name, kvRolesSince):
		return "kv_both"
	case prefill:
		return "kv_producer"
	}
	return "kv_consumer"
}

// KVTransferConfig is the --kv-transfer-config of a prefill (prefill true) or decode
// instance of a disaggregated deployment on this line: vLLM's NixlConnector with the
// instance's KVRole.
func (v *Version) KVTransferConfig(prefill bool) string {
	return `{"kv_connector":"NixlConnector","kv_role":"` + v.KVRole(prefill) + `"}`
}

// KVRoleDeprecated reports whether this line's NixlConnector warns about kv_role kv_both.
func (v *Version) KVRoleDeprecated() bool { return !before(v.Name, kvRolesSince) }
