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
	"github.com/frontier-llm/frontier/workload"
)

func disaggTrial() (*record.Study, *record.Trial) {
	rec := &record.Study{Study: "rag 8b", Engine: "vllm", Model: "org/model", MaxModelLen: 16384,
		Knobs:     []string{"disaggregation", "tensor_parallel_size", "decode_tensor_parallel_size", "max_num_seqs"},
		EngineEnv: map[string]string{"HF_TOKEN": redacted}}
	tr := &record.Trial{Number: 3, State: record.StateComplete, GPUs: 8,
		Config:     map[string]any{"disaggregation": "2p1d", "tensor_parallel_size": 2.0, "decode_tensor_parallel_size": 4.0, "max_num_seqs": 64.0},
		Provenance: &record.Provenance{FrontierVersion: "0.1.0", Launch: record.Launch{Engine: "vllm", EngineVersion: "0.22.0"}}}
	return rec, tr
}

// TestK8sExportOfADisaggregatedTrialDecodesStrictly reads the export of a 2p1d trial with
// the Kubernetes API types, refusing unknown fields: one Deployment per role, with its
// instances as replicas, its role's GPUs and tensor_parallel_size, the NixlConnector and its
// side channel at the pod's address, a Service per role, and the router's Deployment pointed
// at the two Services.
func TestK8sExportOfADisaggregatedTrialDecodesStrictly(t *testing.T) {
	t.Parallel()
	rec, tr := disaggTrial()
	var buf bytes.Buffer
	if err := Export(&buf, rec, tr, FormatK8s); err != nil {
		t.Fatal(err)
	}
	deps := map[string]appsv1.Deployment{}
	svcs := map[string]corev1.Service{}
	claims := 0
	for _, doc := range strings.Split(buf.String(), "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("a document does not parse: %v\n%s", err, doc)
		}
		var err error
		switch meta.Kind {
		case "Deployment":
			var d appsv1.Deployment
			err = yaml.UnmarshalStrict([]byte(doc), &d)
			deps[d.Name] = d
		case "Service":
			var s corev1.Service
			err = yaml.UnmarshalStrict([]byte(doc), &s)
			svcs[s.Name] = s
		case "PersistentVolumeClaim":
			var c corev1.PersistentVolumeClaim
			err = yaml.UnmarshalStrict([]byte(doc), &c)
			claims++
		default:
			t.Fatalf("a document of kind %q:\n%s", meta.Kind, doc)
		}
		if err != nil {
			t.Fatalf("a %s does not decode strictly: %v\n%s", meta.Kind, err, doc)
		}
	}
	if len(deps) != 3 || len(svcs) != 3 || claims != 2 {
		t.Fatalf("%d Deployments, %d Services, %d claims; want 3, 3 and 2", len(deps), len(svcs), claims)
	}
	for _, tc := range []struct {
		name     string
		replicas int32
		gpus, tp string
	}{{"vllm-rag-8b-prefill", 2, "2", "2"}, {"vllm-rag-8b-decode", 1, "4", "4"}} {
		d, ok := deps[tc.name]
		if !ok {
			t.Fatalf("no Deployment %s among %v", tc.name, slices.Collect(func(yield func(string) bool) {
				for k := range deps {
					yield(k)
				}
			}))
		}
		if *d.Spec.Replicas != tc.replicas {
			t.Errorf("%s: %d replicas, want %d", tc.name, *d.Spec.Replicas, tc.replicas)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if g := c.Resources.Limits.Name("nvidia.com/gpu", "DecimalSI"); g.String() != tc.gpus {
			t.Errorf("%s: %s GPUs, want %s", tc.name, g, tc.gpus)
		}
		// vLLM 0.22 measured the trial: both roles are the NixlConnector's kv_both.
		want := []string{"org/model", "--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`, "--tensor-parallel-size", tc.tp, "--max-num-seqs", "64", "--max-model-len", "16384"}
		if diff := cmp.Diff(want, c.Args); diff != "" {
			t.Errorf("%s args (-want +got):\n%s", tc.name, diff)
		}
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		if f := env["VLLM_NIXL_SIDE_CHANNEL_HOST"].ValueFrom; f == nil || f.FieldRef == nil || f.FieldRef.FieldPath != "status.podIP" {
			t.Errorf("%s: the side channel's host is not the pod's address: %+v", tc.name, env["VLLM_NIXL_SIDE_CHANNEL_HOST"])
		}
		if s := svcs[tc.name]; s.Spec.Selector["app.kubernetes.io/name"] != d.Spec.Template.Labels["app.kubernetes.io/name"] {
			t.Errorf("the Service %s does not select the Deployment's pods: %v", tc.name, s.Spec.Selector)
		}
	}
	r := deps["vllm-rag-8b-router"].Spec.Template.Spec.Containers[0]
	wantArgs := []string{"--host", "0.0.0.0", "--port", "8000", "--prefill", "http://vllm-rag-8b-prefill:8000", "--decode", "http://vllm-rag-8b-decode:8000"}
	if diff := cmp.Diff(wantArgs, r.Args); diff != "" || r.Image != "frontier:0.1.0-sim" || !slices.Equal(r.Command, []string{"frontier", "router"}) {
		t.Errorf("router: image %q, command %q, args (-want +got):\n%s", r.Image, r.Command, diff)
	}
	if _, ok := r.Resources.Limits["nvidia.com/gpu"]; ok {
		t.Error("the router asks for a GPU")
	}
}

// TestVLLMArgsExportOfADisaggregatedTrialGivesEachInstance: one command line per instance,
// each with the role's tensor_parallel_size, the NixlConnector with the role's kv_role (the
// 0.22 line that measured it: kv_both), its own port, its own side channel and its own GPUs,
// and the router's line over all of them; the formats that hold one engine refuse the
// trial, saying which do.
func TestVLLMArgsExportOfADisaggregatedTrialGivesEachInstance(t *testing.T) {
	t.Parallel()
	rec, tr := disaggTrial()
	var buf bytes.Buffer
	if err := Export(&buf, rec, tr, FormatVLLMArgs); err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	kv := shellQuote(`{"kv_connector":"NixlConnector","kv_role":"kv_both"}`)
	want := []string{
		"CUDA_VISIBLE_DEVICES=0,1 VLLM_NIXL_SIDE_CHANNEL_HOST=127.0.0.1 VLLM_NIXL_SIDE_CHANNEL_PORT=5600 vllm serve org/model --kv-transfer-config " + kv + " --tensor-parallel-size 2 --max-num-seqs 64 --max-model-len 16384 --port 8100",
		"CUDA_VISIBLE_DEVICES=2,3 VLLM_NIXL_SIDE_CHANNEL_HOST=127.0.0.1 VLLM_NIXL_SIDE_CHANNEL_PORT=5601 vllm serve org/model --kv-transfer-config " + kv + " --tensor-parallel-size 2 --max-num-seqs 64 --max-model-len 16384 --port 8101",
		"CUDA_VISIBLE_DEVICES=4,5,6,7 VLLM_NIXL_SIDE_CHANNEL_HOST=127.0.0.1 VLLM_NIXL_SIDE_CHANNEL_PORT=5602 vllm serve org/model --kv-transfer-config " + kv + " --tensor-parallel-size 4 --max-num-seqs 64 --max-model-len 16384 --port 8200",
		"frontier router --prefill http://127.0.0.1:8100 --prefill http://127.0.0.1:8101 --decode http://127.0.0.1:8200 --port 8000",
	}
	if diff := cmp.Diff(want, cmds); diff != "" {
		t.Errorf("commands (-want +got):\n%s\n%s", diff, buf.String())
	}
	for _, f := range []string{FormatVLLMYAML, FormatDocker} {
		if err := Export(&bytes.Buffer{}, rec, tr, f); err == nil || !strings.Contains(err.Error(), FormatK8s) {
			t.Errorf("export --format %s of a 2p1d trial: %v, want an error naming the formats that carry it", f, err)
		}
	}
}

// TestDisaggregatedExportsUseTheRolesOfTheLine: from the v0.28 line (kv_both deprecated on
// 2026-06-05), the prefill instances are the NixlConnector's kv_producer and the decode
// instances its kv_consumer, in the command lines and in the Kubernetes Deployments; the
// 0.22 line keeps kv_both (the test above).
func TestDisaggregatedExportsUseTheRolesOfTheLine(t *testing.T) {
	t.Parallel()
	rec, tr := disaggTrial()
	tr.Provenance.Launch.EngineVersion = "0.28.1"
	producer := `{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`
	consumer := `{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}`
	var buf bytes.Buffer
	if err := Export(&buf, rec, tr, FormatVLLMArgs); err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, l := range strings.Split(buf.String(), "\n") {
		switch {
		case strings.Contains(l, shellQuote(producer)):
			roles = append(roles, "producer")
		case strings.Contains(l, shellQuote(consumer)):
			roles = append(roles, "consumer")
		case strings.Contains(l, "kv_both"):
			roles = append(roles, "both")
		}
	}
	if diff := cmp.Diff([]string{"producer", "producer", "consumer"}, roles); diff != "" {
		t.Errorf("vllm-args roles (-want +got):\n%s\n%s", diff, buf.String())
	}
	buf.Reset()
	if err := Export(&buf, rec, tr, FormatK8s); err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(buf.String(), "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" || strings.HasSuffix(d.Name, "-router") {
			continue
		}
		args := d.Spec.Template.Spec.Containers[0].Args
		want := consumer
		if strings.HasSuffix(d.Name, "-prefill") {
			want = producer
		}
		if i := slices.Index(args, "--kv-transfer-config"); i < 0 || i+1 >= len(args) || args[i+1] != want {
			t.Errorf("%s: args %q, want --kv-transfer-config %s", d.Name, args, want)
		}
	}
}

// TestDeploymentLinesShowGPUsPerRoleTheTransferAndEachInstance: the report of a disaggregated
// trial names the GPUs of each role, the transfer's share of the time to first token, and
// each instance's engine state.
func TestDeploymentLinesShowGPUsPerRoleTheTransferAndEachInstance(t *testing.T) {
	t.Parallel()
	_, tr := disaggTrial()
	tr.Total = &workload.Result{Metrics: map[string]float64{workload.KVTransferMeanMs: 2.5, workload.KVTransferTTFTShare: 0.05}}
	tr.Provenance.Launch.Instances = []record.Launch{
		{Role: "prefill", Index: 0, Engine: "vllm", GPUNames: []string{"H100", "H100"}, Capacity: &record.Capacity{KVCacheTokens: 400000, MaxConcurrency: 24.4}},
		{Role: "decode", Index: 0, Engine: "vllm", GPUNames: []string{"H100", "H100", "H100", "H100"}, Capacity: &record.Capacity{KVCacheTokens: 900000, MaxConcurrency: 54.9}},
	}
	lines, tb, ok := deploymentLines(tr, false)
	if !ok {
		t.Fatal("no deployment lines for a 2p1d trial")
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"2 prefill instance(s) of 2 GPU(s) and 1 decode instance(s) of 4 GPU(s), 8 GPUs in all", "2.50 ms per request", "5.00% of the mean time to first token"} {
		if !strings.Contains(text, want) {
			t.Errorf("the lines lack %q:\n%s", want, text)
		}
	}
	want := [][]string{{"prefill 0", "2", "400000", "24.40", "vllm "}, {"decode 0", "4", "900000", "54.90", "vllm "}}
	if diff := cmp.Diff(want, tb.Rows); diff != "" {
		t.Errorf("instances (-want +got):\n%s", diff)
	}
	if _, _, ok := deploymentLines(&record.Trial{Config: map[string]any{"max_num_seqs": 8.0}}, false); ok {
		t.Error("deployment lines for a trial of one engine")
	}
}

// TestExportOfATrialBehindThePlansOwnRouterRunsThatRouter: a trial measured behind the plan's
// engine.router exports that router, with the addresses in the environment it reads, never
// frontier's router; the k8s export, which can deploy only frontier's router, refuses.
func TestExportOfATrialBehindThePlansOwnRouterRunsThatRouter(t *testing.T) {
	t.Parallel()
	rec, tr := disaggTrial()
	tr.Provenance.Launch.Role = record.RoleRouter
	tr.Provenance.Launch.Command = []string{"/opt/llm-d/routing-sidecar", "--connector", "nixlv2"}
	var buf bytes.Buffer
	if err := Export(&buf, rec, tr, FormatVLLMArgs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := "FRONTIER_ROUTER_HOST=127.0.0.1 FRONTIER_ROUTER_PORT=8000 FRONTIER_PREFILL_URLS='http://127.0.0.1:8100 http://127.0.0.1:8101' FRONTIER_DECODE_URLS=http://127.0.0.1:8200 /opt/llm-d/routing-sidecar --connector nixlv2"
	if got := lines[len(lines)-1]; got != want {
		t.Errorf("router line:\n got %s\nwant %s", got, want)
	}
	if strings.Contains(buf.String(), "frontier router") {
		t.Errorf("the export deploys frontier's router:\n%s", buf.String())
	}
	err := Export(&bytes.Buffer{}, rec, tr, FormatK8s)
	if err == nil || !strings.Contains(err.Error(), "/opt/llm-d/routing-sidecar") {
		t.Errorf("k8s export behind the plan's router: %v, want a refusal naming that router", err)
	}
}
