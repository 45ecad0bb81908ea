package k8sjob

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/frontier-llm/frontier/engine"
	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/redact"
	"github.com/frontier-llm/frontier/report"
	"github.com/frontier-llm/frontier/vllm"
)

// Options say how the study runs on the cluster.
type Options struct {
	// Workers is the number of pods measuring at once: the Job's parallelism and completions.
	Workers int
	// Storage is the study database's URL (postgres:// or mysql://), or "" for a PostgreSQL
	// server of the study's own, written with the Job. It is never written: the pods take it
	// from a Secret.
	Storage string
	// Image is the workers' container image; "" means DefaultImage of the plan.
	Image string
	// Lease is the workers' --lease; 0 means apply's default.
	Lease time.Duration
	// Vars and VarFiles are the -var and -var-file flags the plan was loaded with: the pods
	// load it with the same, a sensitive variable's value taken from a Secret.
	Vars     []string
	VarFiles []string
	// Environ is the environment the plan was loaded in: its FRONTIER_VAR_ variables reach
	// the pods, and the values of its secrets are never written.
	Environ []string
	// Version is frontier's version, named in the comments and the default image.
	Version string
	// Rand is the source of the generated PostgreSQL password (crypto/rand.Reader).
	Rand io.Reader
	// BackoffLimitPerIndex is how many times a worker's pod is replaced after a failure of
	// its own (not a disruption) before its index fails; 0 means 3.
	BackoffLimitPerIndex int
}

// MaxConfigMapBytes is the most a ConfigMap holds: Kubernetes refuses larger ones.
const MaxConfigMapBytes = 1 << 20

// Paths inside a worker's container.
const (
	StudyDir  = "/study"            // the ConfigMap: the plan and its files, at their relative paths
	WorkDir   = "/var/lib/frontier" // the working folder: the engines' logs (frontier-logs/)
	CacheDir  = "/models"           // the model cache
	varFolder = ".frontier-var-files"
)

// Per-GPU requests of a worker: vLLM runs an API server, an engine core and one worker
// process per GPU, and loads the weights through host memory (as report's Kubernetes export).
const (
	cpuPerGPU       = 4
	memoryGiBPerGPU = 32
	modelCacheGiB   = 500
	shmGiB          = 16
)

// DefaultImage is the worker image of plan p built from the repository's Dockerfile: frontier
// on the image of the plan's engine (vLLM's release of the plan's version line, Ollama's, or
// a plain base for the simulator).
func DefaultImage(p *plan.Plan, version string) string {
	return "frontier:" + version + "-" + engineTag(p)
}

func engineTag(p *plan.Plan) string {
	switch p.Engine.Kind {
	case plan.EngineVLLM:
		return "vllm-v" + vllmVersion(p)
	case plan.EngineOllama:
		return "ollama"
	}
	return "sim"
}

// vllmVersion is the vLLM release the image is built on: the plan's version, or the first
// release of its line.
func vllmVersion(p *plan.Plan) string {
	v := strings.TrimPrefix(p.Engine.Version, "v")
	if v == "" {
		v = vllm.Current
	}
	if strings.Count(v, ".") == 1 {
		v += ".0"
	}
	return v
}

// BaseImage is the image the Dockerfile's BASE argument names for p.
func BaseImage(p *plan.Plan) string {
	switch p.Engine.Kind {
	case plan.EngineVLLM:
		return "vllm/vllm-openai:v" + vllmVersion(p)
	case plan.EngineOllama:
		return "ollama/ollama:latest"
	}
	return "debian:bookworm-slim"
}

// GPUs is what one worker requests: the GPUs the plan's largest configuration needs (the
// product of the largest values of its parallelism knobs) and the device plugin's resource
// name, nvidia.com/gpu, or amd.com/gpu for an AMD SKU. It is 0 for the simulator, whose GPUs
// are simulated, and for a plan that runs on the CPU (hardware.gpus = 0).
func GPUs(p *plan.Plan) (int, string, error) {
	desc := engine.MustLookup(p.Engine.Kind)
	if desc.Simulated || (!p.Hardware.GPUs.All && p.Hardware.GPUs.Count == 0 && len(p.Hardware.GPUs.Indices) == 0) {
		return 0, "", nil
	}
	n := 1
	for _, name := range plan.ParallelKnobs() {
		top := 0.0
		for _, k := range p.Knobs {
			// A disaggregated deployment's instances may be wider than the trial's
			// tensor_parallel_size: the widest role counts.
			if k.Name != name && !(name == "tensor_parallel_size" && (k.Name == plan.PrefillTPKnob || k.Name == plan.DecodeTPKnob)) {
				continue
			}
			top = max(top, k.Max)
			for _, v := range k.Values {
				if f, ok := number(v); ok && f > top {
					top = f
				}
			}
		}
		if top >= 1 {
			n *= int(top)
		}
	}
	// Every instance of the largest "XpYd" value runs in the worker's pod.
	if k := p.Knob(plan.DisaggregationKnob); k != nil {
		most := 1
		for _, v := range k.Values {
			if s, ok := v.(string); ok {
				if d, err := plan.ParseDisaggregation(s); err == nil && d.Prefill+d.Decode > most {
					most = d.Prefill + d.Decode
				}
			}
		}
		n *= most
	}
	vendors := map[string]bool{}
	skus := []string{p.Hardware.SKU}
	for _, k := range p.Knobs {
		if k.Name == plan.SKUKnob {
			for _, v := range k.Values {
				if s, ok := v.(string); ok {
					skus = append(skus, s)
				}
			}
		}
	}
	for _, s := range skus {
		if sku, ok := hw.LookupSKU(s); ok {
			vendors[sku.Vendor] = true
		}
	}
	if len(vendors) > 1 {
		return 0, "", errors.New("the plan's SKUs are of more than one GPU vendor, and a Job's pods request one kind of GPU: write one plan per vendor")
	}
	if vendors["amd"] {
		return n, "amd.com/gpu", nil
	}
	return n, "nvidia.com/gpu", nil
}

// PinnedHostGiB is the host memory the plan's largest KV offloading buffer pins in one
// worker's pod, beyond the per-GPU request: the largest kv_offloading_size times the largest
// data_parallel_size (every engine core pins its own), rounded up. Pinned pages count against
// the container's memory limit.
func PinnedHostGiB(p *plan.Plan) int {
	top := func(name string) float64 {
		best := 0.0
		for _, k := range p.Knobs {
			if k.Name != name {
				continue
			}
			best = max(best, k.Max)
			for _, v := range k.Values {
				if f, ok := number(v); ok {
					best = max(best, f)
				}
			}
		}
		return best
	}
	size := top("kv_offloading_size")
	if size <= 0 {
		return 0
	}
	return int(math.Ceil(size * max(1, top("data_parallel_size"))))
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// file is one file of the ConfigMap: its key and where it is mounted, relative to StudyDir.
type file struct {
	key, rel string
	data     []byte
	from     string // where it was read, for messages
}

// planFiles lists the plan and every file it reads, each at its path relative to the plan's
// folder (var files in a folder of their own), so that the plan's relative paths resolve.
func planFiles(p *plan.Plan, varFiles []string) ([]file, error) {
	type src struct{ path, what string }
	srcs := []src{{p.Filename, "the plan"}}
	for _, c := range p.Workloads {
		if c.Dataset != "" {
			srcs = append(srcs, src{c.Dataset, fmt.Sprintf("workload %q's dataset", c.Name)})
		}
		if c.Arrival.TraceFile != "" {
			srcs = append(srcs, src{c.Arrival.TraceFile, fmt.Sprintf("workload %q's trace", c.Name)})
		}
	}
	for _, g := range p.Quality {
		srcs = append(srcs, src{g.Dataset, fmt.Sprintf("quality %q's evaluation set", g.Name)})
	}
	if p.Model.ConfigJSON != "" {
		srcs = append(srcs, src{p.Model.ConfigJSON, "model.config_json"})
	}
	if p.Model.GGUF != "" {
		srcs = append(srcs, src{p.Model.GGUF, "model.gguf"})
	}
	var out []file
	seen := map[string]bool{}
	for _, s := range srcs {
		abs, err := filepath.Abs(s.path)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(p.Dir, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("%s %s is outside the plan's folder %s: the pods see only that folder (a ConfigMap mounted at %s); move the file beside the plan and name it by a relative path", s.what, s.path, p.Dir, StudyDir)
		}
		rel = filepath.ToSlash(rel)
		if seen[rel] {
			continue
		}
		seen[rel] = true
		data, err := os.ReadFile(abs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.what, err)
		}
		out = append(out, file{rel: rel, data: data, from: s.path})
	}
	for i, vf := range varFiles {
		data, err := os.ReadFile(vf)
		if err != nil {
			return nil, fmt.Errorf("-var-file: %w", err)
		}
		out = append(out, file{rel: fmt.Sprintf("%s/%d-%s", varFolder, i, safeName(filepath.Base(vf))), data: data, from: vf})
	}
	total := 0
	for i := range out {
		out[i].key = fmt.Sprintf("f%d-%s", i, safeName(path.Base(out[i].rel)))
		total += len(out[i].data)
	}
	if total > MaxConfigMapBytes*95/100 {
		big := slices.MaxFunc(out, func(a, b file) int { return len(a.data) - len(b.data) })
		return nil, fmt.Errorf("the plan and its files come to %d bytes, more than a ConfigMap holds (%d); the largest is %s (%d bytes): make it smaller", total, MaxConfigMapBytes, big.from, len(big.data))
	}
	return out, nil
}

// safeName keeps the characters a ConfigMap key may hold ([-._a-zA-Z0-9]), others as '_'.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

// Name is the base of the manifests' names for a study: "frontier-" and the study's name as a
// DNS label, short enough that a pod's host name (the Job's name, a dash and the index) is a
// DNS label too.
func Name(study string) string {
	s := report.DNSLabel(study, 36)
	if s == "" {
		s = "study"
	}
	return "frontier-" + s
}

// studyName is the study's name as apply gives it.
func studyName(p *plan.Plan) string {
	if p.Study.Name != "" {
		return p.Study.Name
	}
	return strings.TrimSuffix(filepath.Base(p.Filename), filepath.Ext(p.Filename))
}

// serverURL reports whether raw names a database server the pods can reach.
func serverURL(raw string) bool {
	for _, s := range []string{"postgres://", "postgresql://", "mysql://"} {
		if strings.HasPrefix(raw, s) {
			return true
		}
	}
	return false
}

// Write writes the manifests of plan p's study as a Kubernetes Indexed Job of opts.Workers
// pods: YAML documents separated by ---, with comments at the top on the Secrets to create,
// how to follow the Job and how to read the report.
func Write(w io.Writer, p *plan.Plan, opts Options) error {
	if opts.Workers < 1 {
		return errors.New("--workers must be at least 1")
	}
	if opts.Storage != "" && !serverURL(opts.Storage) {
		return fmt.Errorf("--storage %s is not a database server: workers on several hosts share one study through PostgreSQL (postgres://...) or MySQL (mysql://...); leave --storage out for a PostgreSQL server of the study's own", redact.URL(opts.Storage))
	}
	if ws := p.Study.WarmStart; ws != "" && !serverURL(ws) {
		return fmt.Errorf("study.warm_start %q names a local database, which the pods cannot read: give the earlier study's server URL", ws)
	}
	if opts.BackoffLimitPerIndex <= 0 {
		opts.BackoffLimitPerIndex = 3
	}
	if opts.Image == "" {
		opts.Image = DefaultImage(p, opts.Version)
	}
	files, err := planFiles(p, opts.VarFiles)
	if err != nil {
		return err
	}
	gpus, resource, err := GPUs(p)
	if err != nil {
		return err
	}
	name := Name(studyName(p))
	m := &manifests{p: p, opts: opts, name: name, files: files, gpus: gpus, resource: resource}
	if opts.Storage == "" {
		if opts.Rand == nil {
			return errors.New("k8sjob: Options.Rand is needed to generate the database password")
		}
		pw := make([]byte, 24)
		if _, err := io.ReadFull(opts.Rand, pw); err != nil {
			return fmt.Errorf("generate the database password: %w", err)
		}
		m.password = hex.EncodeToString(pw)
	}
	if err := m.env(); err != nil {
		return err
	}
	var b strings.Builder
	m.header(&b)
	docs := m.documents()
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		if err := document(&b, d); err != nil {
			return err
		}
	}
	out := b.String()
	// Nothing secret is written, whatever the plan or the flags held: the pods take secrets
	// from Secrets the user creates.
	for _, v := range m.secrets() {
		if strings.Contains(out, v) {
			return errors.New("a secret value would be written into the manifests (it is in the plan, one of its files or a -var flag): pass it through the environment and the plan's secret_env, or a sensitive variable, instead")
		}
	}
	_, err = io.WriteString(w, out)
	return err
}

// manifests is one rendering.
type manifests struct {
	p        *plan.Plan
	opts     Options
	name     string
	files    []file
	gpus     int
	resource string
	password string // of the PostgreSQL server written with the Job, or ""
	// envs are the workers' environment; secretKeys the keys of the Secret <name>-secrets
	// they read, with whether each is optional.
	envs       seq
	secretKeys []secretKey
	args       seq
}

type secretKey struct {
	key      string
	optional bool
}

func (m *manifests) secretName() string  { return m.name + "-secrets" }
func (m *manifests) storageName() string { return m.name + "-storage" }
func (m *manifests) pgName() string      { return m.name + "-postgres" }

// secrets are the values that must not be written: those of the environment's secrets and
// the plan's sensitive variables, and the storage URL's password.
func (m *manifests) secrets() []string {
	vals := redact.Values(nil, m.p.Engine.Env, m.opts.Environ, m.p.Engine.SecretEnv, m.p.SensitiveValues())
	if u, err := url.Parse(m.opts.Storage); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && len(pw) >= redact.MinValueLen {
			vals = append(vals, pw, url.QueryEscape(pw), url.PathEscape(pw))
		}
	}
	return vals
}

// env works out the workers' environment and apply's arguments.
func (m *manifests) env() error {
	p := m.p
	storageSecret, storageKey := m.storageName(), "url"
	if m.password != "" {
		storageSecret = m.pgName()
	}
	m.envs = append(m.envs, secretEnv("FRONTIER_STORAGE", storageSecret, storageKey, false))
	m.envs = append(m.envs, mapping{{"name", "HF_HOME"}, {"value", expand(CacheDir + "/huggingface")}})
	if p.Engine.Kind == plan.EngineOllama {
		m.envs = append(m.envs, mapping{{"name", "OLLAMA_MODELS"}, {"value", expand(CacheDir + "/ollama")}})
	}
	names := slices.Clone(p.Engine.SecretEnv)
	sort.Strings(names)
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		m.envs = append(m.envs, secretEnv(n, m.secretName(), n, false))
		m.secretKeys = append(m.secretKeys, secretKey{n, false})
	}
	if !seen["HF_TOKEN"] && p.Engine.Kind != plan.EngineOllama {
		// A gated model needs it; a public one does without: optional.
		m.envs = append(m.envs, secretEnv("HF_TOKEN", m.secretName(), "HF_TOKEN", true))
		m.secretKeys = append(m.secretKeys, secretKey{"HF_TOKEN", true})
		seen["HF_TOKEN"] = true
	}
	sensitive := func(v string) bool { return p.Variables[v] == plan.SensitiveValue }
	// Variables from the environment, as the plan was loaded.
	var envVars []string
	for _, kv := range m.opts.Environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, plan.EnvVarPrefix) {
			continue
		}
		if _, declared := p.Variables[strings.TrimPrefix(k, plan.EnvVarPrefix)]; !declared || seen[k] {
			continue
		}
		seen[k] = true
		envVars = append(envVars, k)
		if sensitive(strings.TrimPrefix(k, plan.EnvVarPrefix)) {
			m.envs = append(m.envs, secretEnv(k, m.secretName(), k, false))
			m.secretKeys = append(m.secretKeys, secretKey{k, false})
		} else {
			m.envs = append(m.envs, mapping{{"name", k}, {"value", expand(v)}})
		}
	}
	m.args = seq{expand("apply"), expand(path.Join(StudyDir, filepath.Base(p.Filename))), expand("--storage"), varRef("$(FRONTIER_STORAGE)")}
	if m.opts.Lease > 0 {
		m.args = append(m.args, expand("--lease"), expand(m.opts.Lease.String()))
	}
	for _, f := range m.files {
		if strings.HasPrefix(f.rel, varFolder+"/") {
			m.args = append(m.args, expand("-var-file"), expand(path.Join(StudyDir, f.rel)))
		}
	}
	for _, kv := range m.opts.Vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("-var %q is not of the form NAME=VALUE", kv)
		}
		if sensitive(k) {
			// The value comes from the Secret, as FRONTIER_VAR_<name>; a -var would win over it.
			ek := plan.EnvVarPrefix + k
			if !seen[ek] {
				seen[ek] = true
				m.envs = append(m.envs, secretEnv(ek, m.secretName(), ek, false))
				m.secretKeys = append(m.secretKeys, secretKey{ek, false})
			}
			continue
		}
		m.args = append(m.args, expand("-var"), expand(k+"="+v))
	}
	return nil
}

func secretEnv(name, secret, key string, optional bool) mapping {
	ref := mapping{{"name", secret}, {"key", key}}
	if optional {
		ref = append(ref, field{"optional", true})
	}
	return mapping{{"name", name}, {"valueFrom", mapping{{"secretKeyRef", ref}}}}
}

func (m *manifests) labels(component string) mapping {
	return mapping{
		{"app.kubernetes.io/name", "frontier"},
		{"app.kubernetes.io/instance", m.name},
		{"app.kubernetes.io/component", component},
	}
}

func (m *manifests) meta(name, component string) mapping {
	return mapping{{"name", name}, {"labels", m.labels(component)}}
}

// header writes the comments at the top.
func (m *manifests) header(b *strings.Builder) {
	p := m.p
	c := func(format string, args ...any) {
		b.WriteString(strings.TrimRight("# "+comment(fmt.Sprintf(format, args...)), " ") + "\n")
	}
	c("Study %q of %s as a Kubernetes Indexed Job of %d workers, written by frontier %s k8s-job.", studyName(p), filepath.Base(p.Filename), m.opts.Workers, m.opts.Version)
	c("Each worker runs `frontier apply` on the plan against one shared study database; together they")
	c("measure the budget exactly once, and each exits 0 when nothing is left to measure.")
	if m.gpus > 0 {
		c("Each worker requests %d %s: the plan's largest configuration.", m.gpus, m.resource)
	} else {
		c("The workers request no GPU: the plan's engine (%s) needs none.", p.Engine.Kind)
	}
	c("")
	c("1. The image: frontier on the engine's image, from the Dockerfile at the root of frontier's")
	c("   repository; push it where the cluster pulls from and pass --image:")
	c("     docker build --build-arg BASE=%s -t %s .", BaseImage(p), m.opts.Image)
	c("2. The Secrets (nothing secret is written in this file):")
	var lits []string
	for _, k := range m.secretKeys {
		opt := ""
		if k.optional {
			opt = " (optional)"
		}
		lits = append(lits, "--from-literal="+k.key+"=..."+opt)
	}
	if len(lits) > 0 {
		c("     kubectl create secret generic %s %s", m.secretName(), strings.Join(lits, " "))
	}
	if m.password == "" {
		c("     kubectl create secret generic %s --from-literal=url='%s'", m.storageName(), redact.URL(m.opts.Storage))
		c("   (the study database's URL, with its password, as the pods reach it)")
	} else {
		c("   The study database is the PostgreSQL server %s below; its password is generated in", m.pgName())
		c("   the Secret %s.", m.pgName())
	}
	c("3. kubectl apply -f THIS_FILE")
	c("4. Follow the Job:")
	c("     kubectl get job %s --watch", m.name)
	c("     kubectl logs --follow --prefix --max-log-requests %d -l job-name=%s", max(5, m.opts.Workers), m.name)
	c("     kubectl wait --for=condition=Complete job/%s --timeout=48h", m.name)
	c("   A worker that stops (a node drained, a pod preempted) is replaced without counting against")
	c("   its index's %d retries; its running trial is taken back by another worker once its", m.opts.BackoffLimitPerIndex)
	c("   heartbeat has been silent for the lease. Exit 1 (bad input) and 3 (no configuration met")
	c("   every SLO and gate) fail the index at once: a retry would say the same.")
	c("5. The report, from a workstation:")
	if m.password != "" {
		c("     kubectl port-forward svc/%s 5432:5432 &", m.pgName())
		c("     frontier report --storage \"postgres://frontier:$(kubectl get secret %s -o jsonpath='{.data.password}' | base64 -d)@127.0.0.1:5432/frontier?sslmode=disable\"", m.pgName())
	} else {
		c("     frontier report --storage '%s'", redact.URL(m.opts.Storage))
		c("   (through kubectl port-forward when the database is reachable only inside the cluster)")
	}
	c("The model cache %s-model-cache is one ReadWriteMany claim that every worker shares (the model", m.name)
	c("is downloaded once); on a cluster without a ReadWriteMany storage class, make it an emptyDir.")
}

// documents builds every manifest in the order kubectl should create them.
func (m *manifests) documents() []mapping {
	var docs []mapping
	docs = append(docs, m.serviceAccount(), m.configMap(), m.cacheClaim())
	if m.password != "" {
		docs = append(docs, m.pgSecret(), m.pgClaim(), m.pgService(), m.pgStatefulSet())
	}
	return append(docs, m.job())
}

func (m *manifests) serviceAccount() mapping {
	return mapping{
		{"apiVersion", "v1"},
		{"kind", "ServiceAccount"},
		{"metadata", m.meta(m.name+"-worker", "worker")},
		{"automountServiceAccountToken", false},
	}
}

func (m *manifests) configMap() mapping {
	data, bin := mapping{}, mapping{}
	for _, f := range m.files {
		if utf8.Valid(f.data) {
			data = append(data, field{f.key, string(f.data)})
		} else {
			bin = append(bin, field{f.key, base64.StdEncoding.EncodeToString(f.data)})
		}
	}
	return mapping{
		{"apiVersion", "v1"},
		{"kind", "ConfigMap"},
		{"metadata", m.meta(m.name+"-plan", "plan")},
	}.add("data", data).add("binaryData", bin)
}

func claim(meta mapping, mode string, gib int) mapping {
	return mapping{
		{"apiVersion", "v1"},
		{"kind", "PersistentVolumeClaim"},
		{"metadata", meta},
		{"spec", mapping{
			{"accessModes", seq{mode}},
			{"resources", mapping{{"requests", mapping{{"storage", fmt.Sprintf("%dGi", gib)}}}}},
		}},
	}
}

func (m *manifests) cacheClaim() mapping {
	return claim(m.meta(m.name+"-model-cache", "model-cache"), "ReadWriteMany", modelCacheGiB)
}

func (m *manifests) pgSecret() mapping {
	return mapping{
		{"apiVersion", "v1"},
		{"kind", "Secret"},
		{"metadata", m.meta(m.pgName(), "database")},
		{"type", "Opaque"},
		{"stringData", mapping{
			{"password", m.password},
			{"url", fmt.Sprintf("postgres://frontier:%s@%s:5432/frontier?sslmode=disable", m.password, m.pgName())},
		}},
	}
}

func (m *manifests) pgClaim() mapping {
	return claim(m.meta(m.pgName()+"-data", "database"), "ReadWriteOnce", 20)
}

func (m *manifests) pgService() mapping {
	return mapping{
		{"apiVersion", "v1"},
		{"kind", "Service"},
		{"metadata", m.meta(m.pgName(), "database")},
		{"spec", mapping{
			{"selector", m.labels("database")},
			{"ports", seq{mapping{{"name", "postgres"}, {"port", 5432}, {"targetPort", 5432}}}},
		}},
	}
}

func (m *manifests) pgStatefulSet() mapping {
	maxConns := max(100, 10*m.opts.Workers+20)
	return mapping{
		{"apiVersion", "apps/v1"},
		{"kind", "StatefulSet"},
		{"metadata", m.meta(m.pgName(), "database")},
		{"spec", mapping{
			{"serviceName", m.pgName()},
			{"replicas", 1},
			{"selector", mapping{{"matchLabels", m.labels("database")}}},
			{"template", mapping{
				{"metadata", mapping{{"labels", m.labels("database")}}},
				{"spec", mapping{
					{"automountServiceAccountToken", false},
					{"enableServiceLinks", false},
					{"containers", seq{mapping{
						{"name", "postgres"},
						{"image", "postgres:17"},
						{"args", seq{expand("-c"), expand(fmt.Sprintf("max_connections=%d", maxConns))}},
						{"env", seq{
							mapping{{"name", "POSTGRES_USER"}, {"value", expand("frontier")}},
							mapping{{"name", "POSTGRES_DB"}, {"value", expand("frontier")}},
							mapping{{"name", "PGDATA"}, {"value", expand("/var/lib/postgresql/data/pgdata")}},
							secretEnv("POSTGRES_PASSWORD", m.pgName(), "password", false),
						}},
						{"ports", seq{mapping{{"name", "postgres"}, {"containerPort", 5432}}}},
						{"readinessProbe", mapping{
							{"exec", mapping{{"command", seq{expand("pg_isready"), expand("-U"), expand("frontier"), expand("-d"), expand("frontier")}}}},
							{"periodSeconds", 5},
						}},
						{"resources", mapping{{"requests", mapping{{"cpu", "1"}, {"memory", "1Gi"}}}}},
						{"volumeMounts", seq{mapping{{"name", "data"}, {"mountPath", "/var/lib/postgresql/data"}}}},
					}}},
					{"volumes", seq{mapping{{"name", "data"}, {"persistentVolumeClaim", mapping{{"claimName", m.pgName() + "-data"}}}}}},
				}},
			}},
		}},
	}
}

func (m *manifests) job() mapping {
	items := seq{}
	for _, f := range m.files {
		items = append(items, mapping{{"key", f.key}, {"path", f.rel}})
	}
	res := mapping{}
	lim := mapping{}
	if m.gpus > 0 {
		mem := fmt.Sprintf("%dGi", memoryGiBPerGPU*m.gpus+PinnedHostGiB(m.p))
		res = mapping{{"cpu", fmt.Sprint(cpuPerGPU * m.gpus)}, {"memory", mem}, {m.resource, m.gpus}}
		lim = mapping{{"memory", mem}, {m.resource, m.gpus}}
	} else {
		res = mapping{{"cpu", "2"}, {"memory", "4Gi"}}
		lim = mapping{{"memory", "8Gi"}}
	}
	container := mapping{
		{"name", "frontier"},
		{"image", m.opts.Image},
		{"command", seq{expand("frontier")}},
		{"args", m.args},
		{"workingDir", WorkDir},
		{"env", m.envs},
		{"resources", mapping{{"requests", res}, {"limits", lim}}},
		{"volumeMounts", seq{
			mapping{{"name", "plan"}, {"mountPath", StudyDir}, {"readOnly", true}},
			mapping{{"name", "work"}, {"mountPath", WorkDir}},
			mapping{{"name", "model-cache"}, {"mountPath", CacheDir}},
			mapping{{"name", "shm"}, {"mountPath", "/dev/shm"}},
		}},
	}
	pod := mapping{
		{"restartPolicy", "Never"},
		{"serviceAccountName", m.name + "-worker"},
		{"automountServiceAccountToken", false},
		{"enableServiceLinks", false},
		// A worker stopping takes its engine down and records its trial as interrupted.
		{"terminationGracePeriodSeconds", 180},
	}
	if m.password != "" {
		// The workers open the study once the database answers.
		pod = append(pod, field{"initContainers", seq{mapping{
			{"name", "wait-for-database"},
			{"image", m.opts.Image},
			{"command", seq{expand("bash"), expand("-c"), expand(fmt.Sprintf("until (exec 3<>/dev/tcp/%s/5432) 2>/dev/null; do echo waiting for %s; sleep 2; done", m.pgName(), m.pgName()))}},
			{"resources", mapping{{"requests", mapping{{"cpu", "10m"}, {"memory", "16Mi"}}}}},
		}}})
	}
	pod = append(pod,
		field{"containers", seq{container}},
		field{"volumes", seq{
			mapping{{"name", "plan"}, {"configMap", mapping{{"name", m.name + "-plan"}, {"items", items}}}},
			mapping{{"name", "work"}, {"emptyDir", mapping{}}},
			mapping{{"name", "model-cache"}, {"persistentVolumeClaim", mapping{{"claimName", m.name + "-model-cache"}}}},
			mapping{{"name", "shm"}, {"emptyDir", mapping{{"medium", "Memory"}, {"sizeLimit", fmt.Sprintf("%dGi", shmGiB)}}}},
		}})
	return mapping{
		{"apiVersion", "batch/v1"},
		{"kind", "Job"},
		{"metadata", mapping{{"name", m.name}, {"labels", m.labels("worker")}, {"annotations", mapping{{"frontier.study", studyName(m.p)}}}}},
		{"spec", mapping{
			{"completionMode", "Indexed"},
			{"completions", m.opts.Workers},
			{"parallelism", m.opts.Workers},
			{"backoffLimitPerIndex", m.opts.BackoffLimitPerIndex},
			// A replacement starts once the pod it replaces is gone, so one process at a
			// time holds an index's host name.
			{"podReplacementPolicy", "Failed"},
			{"podFailurePolicy", mapping{{"rules", seq{
				mapping{{"action", "Ignore"}, {"onPodConditions", seq{mapping{{"type", "DisruptionTarget"}, {"status", "True"}}}}},
				mapping{{"action", "FailIndex"}, {"onExitCodes", mapping{{"containerName", "frontier"}, {"operator", "In"}, {"values", seq{1, 3}}}}},
			}}}},
			{"template", mapping{
				{"metadata", mapping{{"labels", m.labels("worker")}}},
				{"spec", pod},
			}},
		}},
	}
}
