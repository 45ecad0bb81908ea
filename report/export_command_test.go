package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/frontier-llm/frontier/record"
)

// recordedTrial is a trial of the simulator whose recorded command line is the launcher's:
// the simulator's own flags, the plan's engine arguments, the knobs the launcher passed, and
// the served name, host and port of that launch. Its configuration holds knobs the launcher
// passed no flag for (frontier's own, kv_offloading_size 0).
func recordedTrial() (*record.Study, *record.Trial) {
	rec := &record.Study{Study: "s", Engine: "sim", Model: "org/m", MaxModelLen: 4096,
		Knobs:      []string{"sku", "disaggregation", "max_num_seqs", "enable_prefix_caching", "kv_offloading_size", "kv_offloading_backend"},
		EngineArgs: []string{"--api-key", "sekrit-key-1", "--enable-log-requests", "--vllm-version", "0.22"}}
	tr := &record.Trial{Number: 2, State: record.StateComplete,
		Config: map[string]any{"sku": "h200", "disaggregation": "none", "max_num_seqs": 64.0, "enable_prefix_caching": false,
			"kv_offloading_size": 0.0, "kv_offloading_backend": "native"},
		Provenance: &record.Provenance{Launch: record.Launch{Engine: "sim", EngineVersion: "frontier 0.1.0",
			Command: []string{"/opt/frontier/bin/frontier", "sim", "serve", "org/m", "--sku", "h200", "--architecture", "llama-3.1-8b",
				"--enable-log-requests", "--vllm-version", "0.22", "--load-time=auto", "--max-num-seqs", "64", "--no-enable-prefix-caching",
				"--max-model-len", "4096", "--served-model-name", "org/m", "--host", "127.0.0.1", "--port", "41234"}}}}
	return rec, tr
}

// TestExportIsTheRecordedCommand: the export runs what the trial ran, less what the launcher
// added for that one launch (the program, the simulator's flags, the served name, host and
// port), with the plan's --api-key the launcher moved into VLLM_API_KEY asked for again; a
// knob the launcher passed no flag for stays out, even though the configuration holds it.
func TestExportIsTheRecordedCommand(t *testing.T) {
	t.Parallel()
	rec, tr := recordedTrial()
	got, err := ServeArgs(rec, tr)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"vllm", "serve", "org/m", "--api-key", redacted, "--enable-log-requests", "--max-num-seqs", "64",
		"--no-enable-prefix-caching", "--max-model-len", "4096"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ServeArgs (-want +got):\n%s", diff)
	}
	// The same trial with no recorded command: the launcher's mapping gives the same line.
	tr.Provenance = nil
	rec.EngineArgs = []string{"--api-key", "sekrit-key-1", "--enable-log-requests"}
	got, err = ServeArgs(rec, tr)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ServeArgs without a recorded command (-want +got):\n%s", diff)
	}
}

// TestRecordedCommandWithTheModelAsAFlag: a vLLM-compatible server started with --model
// MODEL exports as vllm serve MODEL, with the rest of its arguments.
func TestRecordedCommandWithTheModelAsAFlag(t *testing.T) {
	t.Parallel()
	rec := &record.Study{Study: "s", Engine: "vllm", Model: "org/m", Knobs: []string{"max_num_seqs"}}
	tr := &record.Trial{Config: map[string]any{"max_num_seqs": 8.0}, Provenance: &record.Provenance{Launch: record.Launch{
		Command: []string{"python", "-m", "vllm.entrypoints.openai.api_server", "--model", "org/m", "--max-num-seqs", "8",
			"--served-model-name", "org/m", "--port", "41000"}}}}
	got, err := ServeArgs(rec, tr)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"vllm", "serve", "org/m", "--max-num-seqs", "8"}, got); diff != "" {
		t.Errorf("ServeArgs (-want +got):\n%s", diff)
	}
}

// TestConfigFileHoldsOnlyFlagsOfTheLine: the --config file of a trial has a key for each flag
// the trial passed that the file can hold, and nothing of frontier's own knobs
// (disaggregation "none" was a key once) nor kv_offloading_size 0 (which vLLM takes as a
// size); the false boolean goes to the command line, which vLLM's config loader needs.
func TestConfigFileHoldsOnlyFlagsOfTheLine(t *testing.T) {
	t.Parallel()
	rec, tr := recordedTrial()
	for _, recorded := range []bool{true, false} {
		if !recorded {
			tr.Provenance = nil
		}
		var buf bytes.Buffer
		if err := Export(&buf, rec, tr, FormatVLLMYAML); err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := yaml.Unmarshal(buf.Bytes(), &cfg); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"model": "org/m", "api-key": redacted, "enable-log-requests": true, "max-num-seqs": 64.0, "max-model-len": 4096.0}
		if diff := cmp.Diff(want, cfg); diff != "" {
			t.Errorf("recorded %v: the file (-want +got):\n%s\n%s", recorded, diff, buf.String())
		}
		if !strings.Contains(buf.String(), "\n#   vllm serve --config FILE --no-enable-prefix-caching\n") {
			t.Errorf("recorded %v: the false boolean is not on the comment's command line:\n%s", recorded, buf.String())
		}
	}
}

// TestExportRefusesARecordedCommandItCannotCarry: a NUL byte in the recorded command line is
// refused, naming the argument.
func TestExportRefusesARecordedCommandItCannotCarry(t *testing.T) {
	t.Parallel()
	rec, tr := recordedTrial()
	tr.Provenance.Launch.Command[9] = "a\x00b"
	err := Export(&bytes.Buffer{}, rec, tr, FormatVLLMArgs)
	if !errors.Is(err, ErrUnexportable) || !strings.Contains(err.Error(), "argument 10 of the recorded command") {
		t.Errorf("Export = %v, want ErrUnexportable naming argument 10 of the recorded command", err)
	}
}
