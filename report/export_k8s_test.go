package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/frontier-llm/frontier/record"
)

// TestK8sExportDecodesStrictlyAsADeployment reads the Kubernetes export with the Kubernetes
// API types, refusing unknown fields, and checks that what it deploys is what the trial ran:
// the GPUs, the command and flags (none of them redacted), the secrets by reference, the
// model cache, the probes, the resource requests and a pinned image.
func TestK8sExportDecodesStrictlyAsADeployment(t *testing.T) {
	t.Parallel()
	rec := &record.Study{Study: "chat 8b", Engine: "vllm", Model: "org/model", MaxModelLen: 8192,
		Knobs:      []string{"tensor_parallel_size", "max_num_seqs"},
		EngineArgs: []string{"--long-prefill-token-threshold", "1024", "--enable-log-requests"},
		EngineEnv:  map[string]string{"HF_TOKEN": redacted, "HF_HUB_OFFLINE": "1", "VLLM_LOGGING_LEVEL": "INFO"}}
	tr := &record.Trial{Number: 7, State: record.StateComplete, Config: map[string]any{"tensor_parallel_size": 2.0, "max_num_seqs": 64.0},
		Provenance: &record.Provenance{Launch: record.Launch{Engine: "vllm", EngineVersion: "0.22.0"}}}
	var buf bytes.Buffer
	if err := Export(&buf, rec, tr, FormatK8s); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, redacted) {
		t.Errorf("the export shows %s for a value that is no secret:\n%s", redacted, out)
	}
	docs := strings.Split(out, "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("the export has %d YAML documents, want a Deployment and a PersistentVolumeClaim:\n%s", len(docs), out)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &d); err != nil {
		t.Fatalf("the Deployment does not decode strictly: %v\n%s", err, docs[0])
	}
	var pvc corev1.PersistentVolumeClaim
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &pvc); err != nil {
		t.Fatalf("the PersistentVolumeClaim does not decode strictly: %v\n%s", err, docs[1])
	}
	if d.Kind != "Deployment" || d.APIVersion != "apps/v1" || pvc.Kind != "PersistentVolumeClaim" {
		t.Errorf("kinds %s %s and %s", d.APIVersion, d.Kind, pvc.Kind)
	}
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	if got := c.Resources.Limits.Name("nvidia.com/gpu", "DecimalSI"); got.Value() != 2 {
		t.Errorf("GPU limit %s, want 2", got)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("no cpu or memory request: %v", c.Resources.Requests)
	}
	wantArgs := []string{"org/model", "--long-prefill-token-threshold", "1024", "--enable-log-requests",
		"--tensor-parallel-size", "2", "--max-num-seqs", "64", "--max-model-len", "8192"}
	if diff := cmp.Diff([]string{"vllm", "serve"}, c.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if c.Image != "vllm/vllm-openai:v0.22.0" {
		t.Errorf("image %q, want the recorded vLLM version", c.Image)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if ref := env["HF_TOKEN"].ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Key != "HF_TOKEN" {
		t.Errorf("HF_TOKEN is not taken from a Secret: %+v", env["HF_TOKEN"])
	}
	if _, ok := env["HF_HUB_OFFLINE"]; ok {
		t.Error("HF_HUB_OFFLINE is set in a pod whose model cache starts empty")
	}
	if env["VLLM_LOGGING_LEVEL"].Value != "INFO" {
		t.Errorf("VLLM_LOGGING_LEVEL = %+v", env["VLLM_LOGGING_LEVEL"])
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" {
			t.Errorf("%s probe %+v, want GET /health", name, p)
		}
	}
	mounted := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "model-cache" && strings.HasPrefix(env[hfCacheEnv].Value, m.MountPath+"/")
	})
	claimed := slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == "model-cache" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name
	})
	if !mounted || !claimed {
		t.Errorf("the model cache is not the claim %q mounted under %s: mounts %+v, volumes %+v", pvc.Name, env[hfCacheEnv].Value, c.VolumeMounts, spec.Volumes)
	}
}

// TestDockerExportPassesSecretsByName checks that a secret_env name reaches the container
// by name only, and that ordinary flags keep their values.
func TestDockerExportPassesSecretsByName(t *testing.T) {
	t.Parallel()
	rec := &record.Study{Study: "s", Engine: "vllm", Model: "org/model",
		EngineArgs: []string{"--long-prefill-token-threshold", "1024"},
		EngineEnv:  map[string]string{"HF_TOKEN": redacted, "MY_PLAIN_NAME": redacted}}
	var buf bytes.Buffer
	if err := Export(&buf, rec, &record.Trial{Number: 1, State: record.StateComplete}, FormatDocker); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{" -e HF_TOKEN ", " -e MY_PLAIN_NAME ", "--long-prefill-token-threshold 1024"} {
		if !strings.Contains(out, want) {
			t.Errorf("docker export lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, redacted) {
		t.Errorf("docker export shows %s:\n%s", redacted, out)
	}
}

// TestK8sExportRequestsTheOffloadingBuffer: a trial with kv_offloading_size pins that much
// host memory in every data-parallel engine core, so the pod's memory request and limit are
// the per-GPU amount plus the pinned buffers; without offloading they are the per-GPU amount.
func TestK8sExportRequestsTheOffloadingBuffer(t *testing.T) {
	t.Parallel()
	rec := &record.Study{Study: "chat", Engine: "vllm", Model: "org/model", MaxModelLen: 8192,
		Knobs: []string{"data_parallel_size", "kv_offloading_size"}}
	for _, c := range []struct {
		config map[string]any
		want   int64 // GiB
	}{
		{map[string]any{"data_parallel_size": 2.0, "kv_offloading_size": 64.0}, 2*k8sMemoryGiBPerGPU + 128},
		{map[string]any{"data_parallel_size": 1.0, "kv_offloading_size": 10.5}, k8sMemoryGiBPerGPU + 11},
		{map[string]any{"data_parallel_size": 2.0, "kv_offloading_size": 0.0}, 2 * k8sMemoryGiBPerGPU},
	} {
		tr := &record.Trial{Number: 1, State: record.StateComplete, Config: c.config, GPUs: int(c.config["data_parallel_size"].(float64)),
			Provenance: &record.Provenance{Launch: record.Launch{Engine: "vllm", EngineVersion: "0.28.0"}}}
		var buf bytes.Buffer
		if err := Export(&buf, rec, tr, FormatK8s); err != nil {
			t.Fatal(err)
		}
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict([]byte(strings.Split(buf.String(), "\n---\n")[0]), &d); err != nil {
			t.Fatalf("the Deployment does not decode strictly: %v\n%s", err, buf.String())
		}
		res := d.Spec.Template.Spec.Containers[0].Resources
		if got := res.Requests.Memory().Value() >> 30; got != c.want {
			t.Errorf("%v: memory request %s, want %dGi", c.config, res.Requests.Memory(), c.want)
		}
		if got := res.Limits.Memory().Value() >> 30; got != c.want {
			t.Errorf("%v: memory limit %s, want %dGi", c.config, res.Limits.Memory(), c.want)
		}
	}
}
