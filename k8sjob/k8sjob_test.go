package k8sjob

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/k8sjob/kubelettest"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/sim"
)

// decoded is a k8s-job output read back with the Kubernetes API types, refusing unknown
// fields and duplicate keys.
type decoded struct {
	header       string
	sa           []corev1.ServiceAccount
	configMaps   []corev1.ConfigMap
	claims       []corev1.PersistentVolumeClaim
	secrets      []corev1.Secret
	services     []corev1.Service
	statefulSets []appsv1.StatefulSet
	jobs         []batchv1.Job
}

func decode(t *testing.T, out string) *decoded {
	t.Helper()
	d := &decoded{}
	docs := strings.Split(out, "\n---\n")
	for i, doc := range docs {
		if i == 0 {
			var lines []string
			for _, l := range strings.Split(doc, "\n") {
				if strings.HasPrefix(l, "#") {
					lines = append(lines, l)
				}
			}
			d.header = strings.Join(lines, "\n")
		}
		var probe struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &probe); err != nil {
			t.Fatalf("document %d is not YAML: %v\n%s", i, err, doc)
		}
		var err error
		switch probe.Kind {
		case "ServiceAccount":
			var v corev1.ServiceAccount
			err = yaml.UnmarshalStrict([]byte(doc), &v)
			d.sa = append(d.sa, v)
		case "ConfigMap":
			var v corev1.ConfigMap
			err = yaml.UnmarshalStrict([]byte(doc), &v)
			d.configMaps = append(d.configMaps, v)
		case "PersistentVolumeClaim":
			var v corev1.PersistentVolumeClaim
			err = yaml.UnmarshalStrict([]byte(doc), &v)
			d.claims = append(d.claims, v)
		case "Secret":
			var v corev1.Secret
			err = yaml.UnmarshalStrict([]byte(doc), &v)
			d.secrets = append(d.secrets, v)
		case "Service":
			var v corev1.Service
			err = yaml.UnmarshalStrict([]byte(doc), &v)
			d.services = append(d.services, v)
		case "StatefulSet":
			var v appsv1.StatefulSet
			err = yaml.UnmarshalStrict([]byte(doc), &v)
			d.statefulSets = append(d.statefulSets, v)
		case "Job":
			var v batchv1.Job
			err = yaml.UnmarshalStrict([]byte(doc), &v)
			d.jobs = append(d.jobs, v)
		default:
			t.Fatalf("document %d is a %q, which k8s-job does not write:\n%s", i, probe.Kind, doc)
		}
		if err != nil {
			t.Fatalf("document %d (%s) does not decode strictly: %v\n%s", i, probe.Kind, err, doc)
		}
	}
	if len(d.jobs) != 1 || len(d.configMaps) != 1 || len(d.sa) != 1 {
		t.Fatalf("%d Jobs, %d ConfigMaps and %d ServiceAccounts, want one of each", len(d.jobs), len(d.configMaps), len(d.sa))
	}
	return d
}

func loadPlan(t *testing.T, path string, opts plan.LoadOptions) *plan.Plan {
	t.Helper()
	for _, s := range hw.SKUs() {
		opts.SKUs = append(opts.SKUs, s.Name)
	}
	for _, a := range sim.Archs() {
		opts.Architectures = append(opts.Architectures, a.Name)
	}
	p, err := plan.Load(path, opts)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return p
}

// largestConfig is the most GPUs a configuration the plan's rules allow needs, found by
// walking the whole grid: what the Job's pods must hold for every trial to fit.
func largestConfig(t *testing.T, p *plan.Plan) int {
	t.Helper()
	seq, err := p.GridSeq()
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for c := range seq {
		if v, err := p.CheckRules(c); err != nil || len(v) > 0 {
			continue
		}
		most = max(most, c.GPUs())
	}
	return most
}

// secretEnviron is the environment of the user who prints the manifests: its secrets must
// not reach them.
var secretEnviron = []string{"HF_TOKEN=hf_verysecretvalue42", "OPENAI_API_KEY=sk-notforthecluster99"}

func TestEveryExamplePlanDecodesStrictlyAsAJobWithItsGPUsAndFiles(t *testing.T) {
	t.Parallel()
	// A copy of the examples, with a stand-in for the GGUF model `frontier testmodel` writes
	// beside the Ollama example.
	examples := t.TempDir()
	if err := os.CopyFS(examples, os.DirFS("../examples")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(examples, "tiny.gguf"), []byte("GGUF\x03\x00\x00\x00stand-in"), 0o644); err != nil {
		t.Fatal(err)
	}
	plans, err := filepath.Glob(filepath.Join(examples, "*.hcl"))
	if err != nil || len(plans) < 7 {
		t.Fatalf("no example plans: %v", err)
	}
	// What each example's pods request: written out, and checked against the grid below.
	wantGPUs := map[string]int{"vllm-70b-tp.hcl": 8, "ja-support.hcl": 2, "vllm-chat.hcl": 1, "model-upgrade.hcl": 8,
		"quickstart.hcl": 0, "procurement.hcl": 0, "ollama-cpu.hcl": 0, "long-context-chat.hcl": 0}
	for _, path := range plans {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			p := loadPlan(t, path, plan.LoadOptions{Environ: secretEnviron})
			var buf bytes.Buffer
			err := Write(&buf, p, Options{Workers: 4, Version: "0.1.0", Environ: secretEnviron})
			if err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			d := decode(t, out)
			for _, kv := range secretEnviron {
				_, v, _ := strings.Cut(kv, "=")
				if strings.Contains(out, v) {
					t.Errorf("the manifests hold the value of the secret %s", kv)
				}
			}
			job := d.jobs[0]
			spec := job.Spec
			if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
				t.Errorf("completionMode %v, want Indexed", spec.CompletionMode)
			}
			if spec.Parallelism == nil || *spec.Parallelism != 4 || spec.Completions == nil || *spec.Completions != 4 {
				t.Errorf("parallelism %v, completions %v, want 4 and 4", spec.Parallelism, spec.Completions)
			}
			if spec.BackoffLimitPerIndex == nil || *spec.BackoffLimitPerIndex < 1 {
				t.Errorf("backoffLimitPerIndex %v", spec.BackoffLimitPerIndex)
			}
			if spec.PodReplacementPolicy == nil || *spec.PodReplacementPolicy != batchv1.Failed {
				t.Errorf("podReplacementPolicy %v, want Failed (one pod per index at a time)", spec.PodReplacementPolicy)
			}
			ignoresDisruption := spec.PodFailurePolicy != nil && slices.ContainsFunc(spec.PodFailurePolicy.Rules, func(r batchv1.PodFailurePolicyRule) bool {
				return r.Action == batchv1.PodFailurePolicyActionIgnore && slices.ContainsFunc(r.OnPodConditions, func(c batchv1.PodFailurePolicyOnPodConditionsPattern) bool {
					return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue
				})
			})
			if !ignoresDisruption {
				t.Errorf("the podFailurePolicy does not ignore disruptions: %+v", spec.PodFailurePolicy)
			}
			pod := spec.Template.Spec
			if pod.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("restartPolicy %q, want Never (a podFailurePolicy requires it)", pod.RestartPolicy)
			}
			if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken ||
				d.sa[0].AutomountServiceAccountToken == nil || *d.sa[0].AutomountServiceAccountToken || pod.ServiceAccountName != d.sa[0].Name {
				t.Errorf("the pods' service account %q (written: %q) mounts an API token", pod.ServiceAccountName, d.sa[0].Name)
			}
			if len(pod.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Containers))
			}
			c := pod.Containers[0]

			want, ok := wantGPUs[filepath.Base(path)]
			if !ok {
				t.Fatalf("a new example: add what its pods request to the table")
			}
			// The table against the grid, where the grid is small enough to walk here.
			if size, finite := p.GridSize(); finite && size <= 50_000 && want > 0 {
				if grid := largestConfig(t, p); grid != want {
					t.Errorf("the largest configuration the rules allow needs %d GPUs; the table says %d", grid, want)
				}
			}
			resource := corev1.ResourceName("nvidia.com/gpu")
			if sku, ok := hw.LookupSKU(p.Hardware.SKU); ok && sku.Vendor == "amd" {
				resource = "amd.com/gpu"
			}
			lim, req := c.Resources.Limits[resource], c.Resources.Requests[resource]
			if lim.Value() != int64(want) || req.Value() != int64(want) {
				t.Errorf("GPU requests %s, limits %s, want %d %s", req.String(), lim.String(), want, resource)
			}

			env := map[string]corev1.EnvVar{}
			for _, e := range c.Env {
				env[e.Name] = e
			}
			for _, name := range []string{dbPasswordEnv, "HF_TOKEN"} {
				if p.Engine.Kind == plan.EngineOllama && name == "HF_TOKEN" {
					continue
				}
				if e := env[name]; e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					t.Errorf("%s is not taken from a Secret: %+v", name, e)
				}
			}
			if !slices.Contains(c.Args, "$(FRONTIER_STORAGE)") {
				t.Errorf("apply's --storage is not the Secret's URL: args %q", c.Args)
			}
			// Without --storage: the study's own PostgreSQL, whose password the pods read
			// from a Secret that is not written (the comments say how to make it once).
			if len(d.statefulSets) != 1 || len(d.services) != 1 || len(d.secrets) != 0 {
				t.Fatalf("%d StatefulSets, %d Services, %d Secrets, want the study's PostgreSQL and no Secret", len(d.statefulSets), len(d.services), len(d.secrets))
			}
			pgRef := env[dbPasswordEnv].ValueFrom.SecretKeyRef
			var pgEnv corev1.EnvVar
			for _, e := range d.statefulSets[0].Spec.Template.Spec.Containers[0].Env {
				if e.Name == "POSTGRES_PASSWORD" {
					pgEnv = e
				}
			}
			if pgEnv.ValueFrom == nil || pgEnv.ValueFrom.SecretKeyRef == nil || *pgEnv.ValueFrom.SecretKeyRef != *pgRef {
				t.Errorf("PostgreSQL's password is %+v, the workers' %+v: want the same Secret key", pgEnv, pgRef)
			}
			got := kubelettest.Expand(env["FRONTIER_STORAGE"].Value, map[string]string{dbPasswordEnv: "0a1b2c"})
			if want := "postgres://frontier:0a1b2c@" + d.services[0].Name + ":5432/frontier?sslmode=disable"; got != want {
				t.Errorf("FRONTIER_STORAGE expands to %q, want %q", got, want)
			}

			// The plan and its files, at their paths relative to the plan.
			mounts := map[string]string{}
			for _, m := range c.VolumeMounts {
				mounts[m.Name] = m.MountPath
			}
			if mounts["shm"] != "/dev/shm" || mounts["model-cache"] == "" || mounts["plan"] != StudyDir {
				t.Errorf("mounts %v, want the plan at %s, a model cache and /dev/shm", mounts, StudyDir)
			}
			var planVol *corev1.ConfigMapVolumeSource
			for _, v := range pod.Volumes {
				if v.Name == "plan" {
					planVol = v.ConfigMap
				}
			}
			if planVol == nil || planVol.Name != d.configMaps[0].Name {
				t.Fatalf("the plan volume is not the ConfigMap %s: %+v", d.configMaps[0].Name, pod.Volumes)
			}
			mounted := map[string]string{} // relative path -> content
			for _, it := range planVol.Items {
				mounted[it.Path] = d.configMaps[0].Data[it.Key]
			}
			reads := []string{p.Filename}
			for _, w := range p.Workloads {
				reads = append(reads, w.Dataset, w.Arrival.TraceFile)
			}
			for _, g := range p.Quality {
				reads = append(reads, g.Dataset)
			}
			for _, f := range reads {
				if f == "" {
					continue
				}
				rel, _ := filepath.Rel(p.Dir, f)
				src, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if got, ok := mounted[filepath.ToSlash(rel)]; !ok || got != string(src) {
					t.Errorf("%s is not mounted at %s/%s with its content (mounted: %v)", f, StudyDir, rel, slices.Sorted(mapKeys(mounted)))
				}
			}
			if want := StudyDir + "/" + filepath.Base(p.Filename); c.Args[1] != want {
				t.Errorf("apply runs %q, want the mounted plan %s", c.Args[1], want)
			}
			for _, l := range strings.Split(d.header, "\n") {
				if strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
					t.Errorf("a comment holds a control character: %q", l)
				}
			}
			written := map[string]bool{}
			for _, s := range d.secrets {
				written[s.Name] = true
			}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !written[e.ValueFrom.SecretKeyRef.Name] {
					if ref := e.ValueFrom.SecretKeyRef; !strings.Contains(d.header, "kubectl create secret generic "+ref.Name) || !strings.Contains(d.header, "--from-literal="+ref.Key+"=") {
						t.Errorf("the pods read %s from the Secret %s, key %s, which the comments do not say how to create", e.Name, ref.Name, ref.Key)
					}
				}
			}
			for _, want := range []string{"kubectl logs", "kubectl port-forward", "frontier report --storage"} {
				if !strings.Contains(d.header, want) {
					t.Errorf("the comments do not say %q:\n%s", want, d.header)
				}
			}
		})
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestAGivenStorageIsReadFromASecretAndNeverWritten checks the manifests with a database of
// the user's: no PostgreSQL of the study's own, the URL (and its password) nowhere, the pods
// reading it from the Secret the comments tell how to create.
func TestAGivenStorageIsReadFromASecretAndNeverWritten(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "../examples/vllm-70b-tp.hcl", plan.LoadOptions{})
	const pw = "Sup3r-s3cret-pw"
	var buf bytes.Buffer
	err := Write(&buf, p, Options{Workers: 2, Version: "0.1.0", Storage: "postgres://study:" + pw + "@db.internal:5432/studies?sslmode=require"})
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	d := decode(t, out)
	if strings.Contains(out, pw) {
		t.Errorf("the manifests hold the database password:\n%s", out)
	}
	if len(d.statefulSets)+len(d.services)+len(d.secrets) != 0 {
		t.Errorf("a PostgreSQL of the study's own is written beside a given database")
	}
	var ref *corev1.SecretKeySelector
	for _, e := range d.jobs[0].Spec.Template.Spec.Containers[0].Env {
		if e.Name == "FRONTIER_STORAGE" && e.ValueFrom != nil {
			ref = e.ValueFrom.SecretKeyRef
		}
	}
	if ref == nil || !strings.Contains(d.header, "kubectl create secret generic "+ref.Name+" --from-literal="+ref.Key+"=") {
		t.Errorf("FRONTIER_STORAGE reads %+v, which the comments do not say how to create:\n%s", ref, d.header)
	}
	if !strings.Contains(d.header, "db.internal:5432/studies") {
		t.Errorf("the comments do not name the database (without its password):\n%s", d.header)
	}
}

// TestEverythingWrittenIsEscapedForYAMLAndForExpansion writes a plan whose study name, file
// names and variables hold YAML's and Kubernetes' special characters: quotes, colons, a
// newline, control characters and $(VAR) references. The manifests decode strictly, the
// args reach apply as they were given once expanded, and the comments hold no control
// character.
func TestEverythingWrittenIsEscapedForYAMLAndForExpansion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := os.ReadFile("../examples/quickstart.hcl")
	if err != nil {
		t.Fatal(err)
	}
	name := "odd: \"$(HOME)\" # \x1b[31mred\x07\u2028$x"
	text := strings.Replace(string(src), `study "quickstart" {`, "variable \"note\" {\n  default = \"\"\n}\n\nstudy "+strconvQuote(name)+" {", 1)
	if text == string(src) {
		t.Fatal("the quickstart's study block moved")
	}
	planPath := filepath.Join(dir, "odd $(X) plan.hcl")
	if err := os.WriteFile(planPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	varFile := filepath.Join(dir, "vars: $(Y).hcl")
	if err := os.WriteFile(varFile, []byte("note = \"from a file\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := []string{"note=$(HOME) and $$ and \"quotes\"\nnext line: x"}
	p := loadPlan(t, planPath, plan.LoadOptions{Vars: vars, VarFiles: []string{varFile}})
	var buf bytes.Buffer
	if err := Write(&buf, p, Options{Workers: 1, Version: "0.1.0", Vars: vars, VarFiles: []string{varFile}}); err != nil {
		t.Fatal(err)
	}
	d := decode(t, buf.String())
	c := d.jobs[0].Spec.Template.Spec.Containers[0]
	env := map[string]string{"HOME": "/root", "X": "x", "Y": "y", "FRONTIER_STORAGE": "postgres://db/s"}
	var args []string
	for _, a := range c.Args {
		args = append(args, kubelettest.Expand(a, env))
	}
	want := []string{"apply", StudyDir + "/odd $(X) plan.hcl", "--storage", "postgres://db/s",
		"-var-file", StudyDir + "/" + varFolder + "/0-vars____Y_.hcl", "-var", vars[0]}
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("apply's arguments after expansion (-want +got):\n%s", diff)
	}
	if d.jobs[0].Annotations["frontier.study"] != name {
		t.Errorf("the study annotation %q, want %q", d.jobs[0].Annotations["frontier.study"], name)
	}
	mounted := map[string]string{}
	for _, v := range d.jobs[0].Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			for _, it := range v.ConfigMap.Items {
				mounted[it.Path] = d.configMaps[0].Data[it.Key]
			}
		}
	}
	if mounted["odd $(X) plan.hcl"] != text || mounted[varFolder+"/0-vars____Y_.hcl"] != "note = \"from a file\"\n" {
		t.Errorf("the plan and the var file are not mounted as they are: %v", slices.Sorted(mapKeys(mounted)))
	}
	for _, l := range strings.Split(d.header, "\n") {
		if strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0x2028 }) {
			t.Errorf("a comment holds a control character: %q", l)
		}
	}
	if !strings.Contains(d.header, `\x1b[31mred\a\u2028`) {
		t.Errorf("the study name's control characters are not shown escaped:\n%s", d.header)
	}
}

func strconvQuote(s string) string {
	// HCL's string escapes are JSON's: \" \\ \n \uNNNN; ${ and %{ start templates.
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20 || r == 0x2028:
			b.WriteString(`\u` + strings.ToUpper(strings.TrimLeft(string(rune(0)), "\x00")) + hex4(r))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func hex4(r rune) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]})
}

// TestSensitiveVariablesComeFromTheSecret checks that a -var of a sensitive variable is not
// written: the pods read it from the Secret as FRONTIER_VAR_<name>.
func TestSensitiveVariablesComeFromTheSecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := os.ReadFile("../examples/quickstart.hcl")
	if err != nil {
		t.Fatal(err)
	}
	text := "variable \"key\" {\n  default   = \"\"\n  sensitive = true\n}\n\n" + string(src)
	path := filepath.Join(dir, "plan.hcl")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := []string{"key=k-sensitive-value-77"}
	p := loadPlan(t, path, plan.LoadOptions{Vars: vars})
	var buf bytes.Buffer
	if err := Write(&buf, p, Options{Workers: 1, Version: "0.1.0", Vars: vars}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "k-sensitive-value-77") {
		t.Fatalf("the sensitive variable's value is written:\n%s", out)
	}
	d := decode(t, out)
	found := false
	for _, e := range d.jobs[0].Spec.Template.Spec.Containers[0].Env {
		if e.Name == plan.EnvVarPrefix+"key" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			found = true
		}
	}
	if !found || !strings.Contains(d.header, "--from-literal="+plan.EnvVarPrefix+"key=") {
		t.Errorf("the sensitive variable is not read from the Secret the comments name")
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "../examples/quickstart.hcl", plan.LoadOptions{})
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no workers", Options{Workers: 0}, "--workers must be at least 1"},
		{"more workers than a Job has indexes", Options{Workers: MaxWorkers + 1}, "at most 100000"},
		{"a backoff limit past int32", Options{Workers: 1, BackoffLimitPerIndex: 1 << 31}, "more than a Job holds (2147483647)"},
		{"a SQLite study", Options{Workers: 2, Storage: "study.db"}, "is not a database server"},
		{"a SQLite URL", Options{Workers: 2, Storage: "sqlite:///tmp/x.db"}, "PostgreSQL (postgres://...)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			err := Write(&buf, p, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes on a refusal", buf.Len())
			}
		})
	}
}

func TestAPlanFileOutsideItsFolderIsRefusedByName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "plans"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte("{\"prompt\": \"hi\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../examples/quickstart.hcl")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "workload \"chat\" {", "workload \"chat\" {\n  dataset = \"../prompts.jsonl\"", 1)
	path := filepath.Join(dir, "plans", "plan.hcl")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := plan.Load(path, plan.LoadOptions{})
	if err != nil {
		t.Skipf("the quickstart with a dataset does not load: %v", err)
	}
	var buf bytes.Buffer
	err = Write(&buf, p, Options{Workers: 1})
	if err == nil || !strings.Contains(err.Error(), "prompts.jsonl is outside the plan's folder") {
		t.Errorf("error %v, want one naming the dataset outside the plan's folder", err)
	}
}

// FuzzQuote checks that every string quote writes reads back as itself (invalid UTF-8 as
// U+FFFD), through the YAML reader Kubernetes' tools use.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "plain", "a: b", "- x", "#c", "\"q\"", "back\\slash", "nl\nx", "\t", "\x00\x1b\x7f", "\u0085\u2028\u2029\ufeff", "\xff\xfe", "$(VAR) $$", "yes", "null", "1e3", "🙂", "\U0010FFFF"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got map[string]string
		if err := yaml.Unmarshal([]byte("k: "+quote(s)+"\n"), &got); err != nil {
			t.Fatalf("quote(%q) = %s does not read back: %v", s, quote(s), err)
		}
		if want := strings.ToValidUTF8(s, "\uFFFD"); got["k"] != want && !(strings.ContainsRune(s, utf8RuneError) && got["k"] == validRunes(s)) {
			t.Fatalf("quote(%q) = %s reads back as %q", s, quote(s), got["k"])
		}
		if c := comment(s); strings.ContainsFunc(c, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 }) {
			t.Fatalf("comment(%q) = %q holds a control character", s, c)
		}
	})
}

const utf8RuneError = '\uFFFD'

// validRunes replaces each invalid byte of s with U+FFFD, as quote does (ToValidUTF8 replaces
// a run of them with one).
func validRunes(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}
