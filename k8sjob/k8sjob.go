package k8sjob

import (
	"crypto/sha256"
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
	// BackoffLimitPerIndex is how many times a worker's pod is replaced after a failure of
	// its own (not a disruption) before its index fails; 0 means 3.
	BackoffLimitPerIndex int
}

// MaxConfigMapBytes is the most a ConfigMap holds: the API server refuses one whose data
// and binaryData values (binaryData decoded) come to more. The manifests are applied with
// `kubectl apply --server-side`, which sends the objects as they are; a plain (client-side)
// kubectl apply would also copy the ConfigMap into its last-applied-configuration annotation,
// which holds at most 256 KiB.
const MaxConfigMapBytes = 1 << 20

// Bounds of one worker's pod, refused beyond: a pod runs on one node.
const (
	// MaxWorkerGPUs is the most GPUs one worker's pod may request; GPU nodes hold 8 or 16.
	MaxWorkerGPUs = 64
	// MaxWorkerMemoryGiB is the most host memory one worker's pod may request, GiB.
	MaxWorkerMemoryGiB = 16 << 10
	// MaxWorkers is the most workers a Job may have: an Indexed Job's completions and
	// parallelism are at most 100,000.
	MaxWorkers = 100_000
)

// The user and group the containers run as: PodSecurity "restricted" requires a user other
// than root, and the images of vLLM and Ollama run as root unless told otherwise. The
// PostgreSQL image's postgres user is 999.
const (
	workerUID   = 1000
	postgresUID = 999
)

// DatabaseWait is how long a worker's init container waits for the study's own PostgreSQL
// to answer before it fails (and the Job retries the pod, within backoffLimitPerIndex).
const DatabaseWait = 10 * time.Minute

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
// are simulated, and for a plan that runs on the CPU (hardware.gpus = 0). A product over
// MaxWorkerGPUs is an error that names the knobs.
func GPUs(p *plan.Plan) (int, string, error) {
	desc := engine.MustLookup(p.Engine.Kind)
	if desc.Simulated || (!p.Hardware.GPUs.All && p.Hardware.GPUs.Count == 0 && len(p.Hardware.GPUs.Indices) == 0) {
		return 0, "", nil
	}
	// The product is taken in float64, so that no value, however large, wraps around.
	n := 1.0
	var factors []string
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
			n *= math.Floor(top)
			factors = append(factors, fmt.Sprintf("%s %g", name, math.Floor(top)))
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
		n *= float64(most)
		if most > 1 {
			factors = append(factors, fmt.Sprintf("%d instances of disaggregation", most))
		}
	}
	if math.IsNaN(n) || n > MaxWorkerGPUs {
		return 0, "", fmt.Errorf("the plan's largest configuration needs %g GPUs (%s), more than one worker's pod may request (%d): a pod runs on one node; lower the largest values of those knobs", n, strings.Join(factors, " × "), MaxWorkerGPUs)
	}
	vendors := map[string]bool{}
	for _, s := range planSKUs(p) {
		if sku, ok := hw.LookupSKU(s); ok {
			vendors[sku.Vendor] = true
		}
	}
	if len(vendors) > 1 {
		return 0, "", errors.New("the plan's SKUs are of more than one GPU vendor, and a Job's pods request one kind of GPU: write one plan per vendor")
	}
	if vendors["amd"] {
		return int(n), "amd.com/gpu", nil
	}
	return int(n), "nvidia.com/gpu", nil
}

// planSKUs are the SKUs the plan names: hardware.sku and the values of a "sku" knob.
func planSKUs(p *plan.Plan) []string {
	var skus []string
	if p.Hardware.SKU != "" {
		skus = append(skus, p.Hardware.SKU)
	}
	for _, k := range p.Knobs {
		if k.Name == plan.SKUKnob {
			for _, v := range k.Values {
				if s, ok := v.(string); ok && !slices.Contains(skus, s) {
					skus = append(skus, s)
				}
			}
		}
	}
	return skus
}

// gpuProducts are the values NVIDIA's GPU feature discovery gives the node label
// nvidia.com/gpu.product for a SKU of the catalog (hw.SKUs): the NVML device name with its
// spaces written as dashes, for each form the SKU is sold in. It is nil for a SKU whose label
// is not known (AMD's, whose node labeller uses other labels).
func gpuProducts(sku string) []string {
	switch sku {
	case "h100-sxm":
		return []string{"NVIDIA-H100-80GB-HBM3"}
	case "h100-pcie":
		return []string{"NVIDIA-H100-PCIe"}
	case "h200":
		return []string{"NVIDIA-H200"}
	case "a100-80gb":
		return []string{"NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe"}
	case "a100-40gb":
		return []string{"NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB"}
	case "l40s":
		return []string{"NVIDIA-L40S"}
	case "l4":
		return []string{"NVIDIA-L4"}
	case "a10g":
		return []string{"NVIDIA-A10G"}
	case "gh200":
		return []string{"NVIDIA-GH200-480GB"}
	case "b200":
		return []string{"NVIDIA-B200"}
	}
	return nil
}

// GPUProductLabel is the node label of NVIDIA's GPU feature discovery that names a node's GPU.
const GPUProductLabel = "nvidia.com/gpu.product"

// GPUProducts are the values of GPUProductLabel the workers' pods are scheduled on: those of
// every SKU the plan names (hardware.sku, a "sku" knob). It is nil, and the pods go on any
// node with the GPUs, when the plan names no SKU, or one whose label is not known.
func GPUProducts(p *plan.Plan) []string {
	skus := planSKUs(p)
	var out []string
	for _, s := range skus {
		names := gpuProducts(s)
		if names == nil {
			return nil
		}
		out = append(out, names...)
	}
	return out
}

// PinnedHostGiB is the host memory the plan's largest KV offloading buffer pins in one
// worker's pod, beyond the per-GPU request: the largest kv_offloading_size times the largest
// data_parallel_size (every engine core pins its own), rounded up. Pinned pages count against
// the container's memory limit. More than MaxWorkerMemoryGiB is an error that names the knobs.
func PinnedHostGiB(p *plan.Plan) (int, error) {
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
	if !(size > 0) {
		return 0, nil
	}
	dp := max(1, top("data_parallel_size"))
	gib := math.Ceil(size * dp)
	if gib > MaxWorkerMemoryGiB {
		return 0, fmt.Errorf("the plan's largest kv_offloading_size (%g GiB) on its largest data_parallel_size (%g) pins %g GiB of host memory in one worker's pod, more than it may request (%d GiB): a pod runs on one node; lower the largest values of those knobs", size, dp, gib, MaxWorkerMemoryGiB)
	}
	return int(gib), nil
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
	what     string // what it is to the plan: "the plan", "-var-file", "workload \"chat\"'s dataset"
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
		out = append(out, file{rel: rel, data: data, from: s.path, what: s.what})
	}
	for i, vf := range varFiles {
		data, err := os.ReadFile(vf)
		if err != nil {
			return nil, fmt.Errorf("-var-file: %w", err)
		}
		out = append(out, file{rel: fmt.Sprintf("%s/%d-%s", varFolder, i, safeName(filepath.Base(vf))), data: data, from: vf, what: "-var-file"})
	}
	total := 0
	for i := range out {
		out[i].key = fmt.Sprintf("f%d-%s", i, safeName(path.Base(out[i].rel)))
		total += len(out[i].data)
	}
	// What the API server counts: the data values' bytes and binaryData's decoded bytes,
	// which are the files' own bytes either way.
	if total > MaxConfigMapBytes {
		big := slices.MaxFunc(out, func(a, b file) int { return len(a.data) - len(b.data) })
		return nil, fmt.Errorf("the plan and its files come to %d bytes, more than a ConfigMap holds (%d bytes, the API server's limit); the largest is %s (%d bytes): make it smaller, or have the pods read it from elsewhere (a model given by name is downloaded, not copied)", total, MaxConfigMapBytes, big.from, len(big.data))
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

// Name is the base of the manifests' names for a study: "frontier-", the study's name as a
// DNS label cut to 25 characters, a dash and 8 hex digits of a SHA-256 of the study's
// identity: its exact name and the database it is kept in (storage's scheme, host, port and
// database; "" for a PostgreSQL of the study's own). Two studies of one namespace differ in
// name even when their names fold to the same label ("Chat" and "chat", "a_b" and "a-b",
// names of other scripts) or share their first 25 characters. The longest name is 43
// characters, so that every object's name and the names Kubernetes derives from them are
// DNS labels: a pod's host name (the Job's name, a dash and an index of up to 5 digits) and
// the StatefulSet's revision label (its name, a dash and 10 characters).
func Name(study, storage string) string {
	h := sha256.Sum256([]byte(study + "\x00" + storageIdentity(storage)))
	sum := hex.EncodeToString(h[:4])
	if s := report.DNSLabel(study, 25); s != "" {
		return "frontier-" + s + "-" + sum
	}
	return "frontier-" + sum
}

// storageIdentity is the database a storage URL names, without what may change between runs
// of one study (the password, the user, options): the scheme (postgresql written postgres),
// the host in lower case with its port (the default one when the URL gives none) and the
// database's name. It is "" for "".
func storageIdentity(raw string) string {
	if raw == "" {
		return ""
	}
	scheme, rest, _ := strings.Cut(raw, "://")
	scheme = strings.ToLower(scheme)
	if scheme == "postgresql" {
		scheme = "postgres"
	}
	rest, _, _ = strings.Cut(rest, "?")
	// The authority ends at the first slash and the user and password at its last @, as
	// url.Parse reads them; a MySQL address may be written tcp(host:port), which url.Parse
	// does not read, so the cut is made here.
	authority, db, _ := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		authority = authority[at+1:]
	}
	host := strings.ToLower(authority)
	if !strings.ContainsAny(host, "()") && !hasPort(host) {
		switch scheme {
		case "postgres":
			host += ":5432"
		case "mysql":
			host += ":3306"
		}
	}
	return scheme + "://" + host + "/" + db
}

// hasPort reports whether host (a URL's host, an IPv6 address in brackets) ends with a port.
func hasPort(host string) bool {
	i := strings.LastIndexByte(host, ':')
	if i < 0 || i < strings.LastIndexByte(host, ']') || i+1 == len(host) {
		return false
	}
	for _, c := range host[i+1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
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
	if opts.Workers < 1 || opts.Workers > MaxWorkers {
		return fmt.Errorf("--workers must be at least 1 and at most %d (an Indexed Job's most completions), not %d", MaxWorkers, opts.Workers)
	}
	if opts.BackoffLimitPerIndex > math.MaxInt32 {
		return fmt.Errorf("--backoff-limit-per-index %d is more than a Job holds (%d)", opts.BackoffLimitPerIndex, math.MaxInt32)
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
	pinned, err := PinnedHostGiB(p)
	if err != nil {
		return err
	}
	if gpus > 0 && memoryGiBPerGPU*gpus+pinned > MaxWorkerMemoryGiB {
		return fmt.Errorf("a worker's pod would request %d GiB of host memory (%d GiB for each of its %d GPUs and %d GiB of KV offloading), more than it may request (%d GiB)", memoryGiBPerGPU*gpus+pinned, memoryGiBPerGPU, gpus, pinned, MaxWorkerMemoryGiB)
	}
	m := &manifests{p: p, opts: opts, name: Name(studyName(p), opts.Storage), files: files, gpus: gpus, resource: resource, pinnedGiB: pinned,
		ownDatabase: opts.Storage == ""}
	if gpus > 0 && resource == "nvidia.com/gpu" {
		m.products = GPUProducts(p)
	}
	if err := m.env(); err != nil {
		return err
	}
	var b strings.Builder
	m.header(&b)
	docs := m.documents()
	// Nothing secret is written, whatever the plan or the flags held: the pods take secrets
	// from Secrets the user creates. Each string is checked as Kubernetes reads it (before
	// YAML's escapes and the $$ of expansion), and each file of the ConfigMap also as the
	// plan reads it (HCL's and JSON's escapes undone).
	if err := m.checkSecrets(docs); err != nil {
		return err
	}
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		if err := document(&b, d); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// manifests is one rendering.
type manifests struct {
	p         *plan.Plan
	opts      Options
	name      string
	files     []file
	gpus      int
	resource  string
	pinnedGiB int
	// products are the values of the node label GPUProductLabel the pods go on, or nil.
	products []string
	// ownDatabase: a PostgreSQL server of the study's own is written with the Job.
	ownDatabase bool
	// headerText is the comments at the top as written before comment's escapes.
	headerText []string
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

// dbPasswordEnv is the workers' variable that holds the password of the study's own
// PostgreSQL, from its Secret.
const dbPasswordEnv = "FRONTIER_DB_PASSWORD"

// ownURL is the URL of the study's own PostgreSQL with password pw, as the pods reach it.
func (m *manifests) ownURL(pw string) string {
	return fmt.Sprintf("postgres://frontier:%s@%s:5432/frontier?sslmode=disable", pw, m.pgName())
}

// secrets are the values that must not be written: those of the environment's secrets and
// the plan's sensitive variables, and the storage URL's password.
func (m *manifests) secrets() []string {
	vals := redact.Values(nil, m.p.Engine.Env, m.opts.Environ, m.p.Engine.SecretEnv, m.p.SensitiveValues())
	if pw := storagePassword(m.opts.Storage); len(pw) >= redact.MinValueLen {
		vals = append(vals, pw)
		if u, err := url.PathUnescape(pw); err == nil && u != pw && len(u) >= redact.MinValueLen {
			vals = append(vals, u)
		}
	}
	return vals
}

// storagePassword is the password of a storage URL as written in it (percent-encoded where
// it was), read as url.Parse reads it but also from a MySQL address, tcp(host:port), which
// url.Parse refuses.
func storagePassword(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	authority, _, _ := strings.Cut(rest, "/")
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return ""
	}
	_, pw, _ := strings.Cut(authority[:at], ":")
	return pw
}

// env works out the workers' environment and apply's arguments.
func (m *manifests) env() error {
	p := m.p
	if m.ownDatabase {
		// The password is the Secret's, which the user creates once (the header): the URL is
		// put together by Kubernetes' expansion of the variable defined just before it.
		m.envs = append(m.envs, secretEnv(dbPasswordEnv, m.pgName(), "password", false))
		m.envs = append(m.envs, mapping{{"name", "FRONTIER_STORAGE"}, {"value", varRef(m.ownURL("$(" + dbPasswordEnv + ")"))}})
	} else {
		m.envs = append(m.envs, secretEnv("FRONTIER_STORAGE", m.storageName(), "url", false))
	}
	// The containers run as a user of no home folder of the image's: vLLM's, Triton's and
	// Ollama's caches and keys go to the working folder.
	m.envs = append(m.envs, mapping{{"name", "HOME"}, {"value", expand(WorkDir)}})
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
		line := fmt.Sprintf(format, args...)
		m.headerText = append(m.headerText, line)
		b.WriteString(strings.TrimRight("# "+comment(line), " ") + "\n")
	}
	c("Study %q of %s as a Kubernetes Indexed Job of %d workers, written by frontier %s k8s-job.", studyName(p), filepath.Base(p.Filename), m.opts.Workers, m.opts.Version)
	c("Each worker runs `frontier apply` on the plan against one shared study database; together they")
	c("measure the budget exactly once, and each exits 0 when nothing is left to measure.")
	if m.gpus > 0 {
		c("Each worker requests %d %s: the plan's largest configuration.", m.gpus, m.resource)
		if len(m.products) > 0 {
			c("The workers go on nodes labelled %s=%s", GPUProductLabel, strings.Join(m.products, " or "))
			c("(the plan's SKU as NVIDIA's GPU feature discovery names it); edit the Job's affinity where")
			c("your nodes are labelled otherwise.")
		} else {
			c("The workers go on any node with the GPUs: the plan names no SKU whose node label frontier knows.")
		}
	} else {
		c("The workers request no GPU: the plan's engine (%s) needs none.", p.Engine.Kind)
	}
	c("The pods meet PodSecurity \"restricted\": the workers run as user %d, PostgreSQL as %d.", workerUID, postgresUID)
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
	if !m.ownDatabase {
		c("     kubectl create secret generic %s --from-literal=url='%s'", m.storageName(), redact.URL(m.opts.Storage))
		c("   (the study database's URL, with its password, as the pods reach it)")
	} else {
		c("   The study database is the PostgreSQL server %s below. Its password, made once and", m.pgName())
		c("   kept (PostgreSQL keeps the password its data was created with):")
		c("     kubectl get secret %s >/dev/null 2>&1 || kubectl create secret generic %s --from-literal=password=\"$(openssl rand -hex 24)\"", m.pgName(), m.pgName())
		c("   (any password of letters and digits: the workers put it in the database's URL).")
	}
	c("3. kubectl apply --server-side -f THIS_FILE")
	c("   (server-side: a plain kubectl apply copies each object into an annotation of at most")
	c("   256 KiB, which the plan's files may pass; a ConfigMap holds 1 MiB.)")
	c("   To apply it again with other flags (--image, --lease, --workers, -var) or a changed plan,")
	c("   delete the Job first: its pod template cannot change (\"field is immutable\"), and")
	c("   running workers keep the plan they loaded. The study resumes from the database:")
	c("     kubectl delete job %s --cascade=foreground", m.name)
	c("4. Follow the Job:")
	c("     kubectl get job %s --watch", m.name)
	c("     kubectl get events --field-selector involvedObject.name=%s   (a pod that is not created)", m.name)
	c("     kubectl logs --follow --prefix --max-log-requests %d -l job-name=%s", max(5, m.opts.Workers), m.name)
	c("     kubectl wait --for=condition=Complete job/%s --timeout=48h", m.name)
	c("   A worker that stops (a node drained, a pod preempted) is replaced without counting against")
	c("   its index's %d retries; its running trial is taken back by another worker once its", m.opts.BackoffLimitPerIndex)
	c("   heartbeat has been silent for the lease. Exit 1 (bad input) and 3 (no configuration met")
	c("   every SLO and gate) fail the index at once: a retry would say the same.")
	if m.ownDatabase {
		c("   A worker waits up to %s for the database to answer, then fails and is retried.", DatabaseWait)
	}
	c("5. The report, from a workstation:")
	if m.ownDatabase {
		c("     kubectl port-forward svc/%s 5432:5432 &", m.pgName())
		c("     frontier report --storage \"postgres://frontier:$(kubectl get secret %s -o jsonpath='{.data.password}' | base64 -d)@127.0.0.1:5432/frontier?sslmode=disable\"", m.pgName())
	} else {
		c("     frontier report --storage '%s'", redact.URL(m.opts.Storage))
		c("   (through kubectl port-forward when the database is reachable only inside the cluster)")
	}
	c("The model cache %s-model-cache is one ReadWriteMany claim that every worker shares (the model", m.name)
	c("is downloaded once); on a cluster without a ReadWriteMany storage class, make it an emptyDir.")
	c("The workers write it as group %d (the pod's fsGroup): a volume whose driver ignores fsGroup", workerUID)
	c("(NFS) needs its folder writable by that group.")
}

// documents builds every manifest in the order kubectl should create them.
func (m *manifests) documents() []mapping {
	var docs []mapping
	docs = append(docs, m.serviceAccount(), m.configMap(), m.cacheClaim())
	if m.ownDatabase {
		docs = append(docs, m.pgClaim(), m.pgService(), m.pgStatefulSet())
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
			bin = append(bin, field{f.key, binary(f.data)})
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

// podSecurity is a pod's securityContext under PodSecurity "restricted": a user other than
// root, its group owning the pod's volumes (changed only where the volume's root differs,
// so that a large model cache is not walked at each start), the runtime's seccomp profile.
func podSecurity(uid int) mapping {
	return mapping{
		{"runAsNonRoot", true},
		{"runAsUser", uid},
		{"runAsGroup", uid},
		{"fsGroup", uid},
		{"fsGroupChangePolicy", "OnRootMismatch"},
		{"seccompProfile", mapping{{"type", "RuntimeDefault"}}},
	}
}

// containerSecurity is a container's securityContext under PodSecurity "restricted".
func containerSecurity() mapping {
	return mapping{
		{"allowPrivilegeEscalation", false},
		{"capabilities", mapping{{"drop", seq{"ALL"}}}},
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
					{"securityContext", podSecurity(postgresUID)},
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
						{"securityContext", containerSecurity()},
						{"volumeMounts", seq{mapping{{"name", "data"}, {"mountPath", "/var/lib/postgresql/data"}}}},
					}}},
					{"volumes", seq{mapping{{"name", "data"}, {"persistentVolumeClaim", mapping{{"claimName", m.pgName() + "-data"}}}}}},
				}},
			}},
		}},
	}
}

// waitScript is the init container's bash script: it waits for host:port to take
// connections, at most secs seconds, then fails with a message that names host.
func waitScript(host string, port, secs int) string {
	return fmt.Sprintf("until (exec 3<>/dev/tcp/%[1]s/%[2]d) 2>/dev/null; do "+
		"if [ \"$SECONDS\" -ge %[3]d ]; then echo \"the study database %[1]s did not answer within %[3]ds: kubectl describe statefulset %[1]s\" >&2; exit 1; fi; "+
		"echo waiting for %[1]s; sleep 1; done", host, port, secs)
}

func (m *manifests) job() mapping {
	items := seq{}
	for _, f := range m.files {
		items = append(items, mapping{{"key", f.key}, {"path", f.rel}})
	}
	res := mapping{}
	lim := mapping{}
	if m.gpus > 0 {
		mem := fmt.Sprintf("%dGi", memoryGiBPerGPU*m.gpus+m.pinnedGiB)
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
		{"securityContext", containerSecurity()},
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
		{"securityContext", podSecurity(workerUID)},
	}
	if m.gpus > 0 {
		// GPU nodes are commonly tainted with the device plugin's resource name.
		pod = append(pod, field{"tolerations", seq{mapping{{"key", m.resource}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}})
	}
	if len(m.products) > 0 {
		products := seq{}
		for _, n := range m.products {
			products = append(products, n)
		}
		pod = append(pod, field{"affinity", mapping{{"nodeAffinity", mapping{{"requiredDuringSchedulingIgnoredDuringExecution", mapping{
			{"nodeSelectorTerms", seq{mapping{{"matchExpressions", seq{mapping{{"key", GPUProductLabel}, {"operator", "In"}, {"values", products}}}}}}},
		}}}}}})
	}
	if m.ownDatabase {
		// The workers open the study once the database answers.
		pod = append(pod, field{"initContainers", seq{mapping{
			{"name", "wait-for-database"},
			{"image", m.opts.Image},
			{"command", seq{expand("bash"), expand("-c"), expand(waitScript(m.pgName(), 5432, int(DatabaseWait/time.Second)))}},
			{"resources", mapping{{"requests", mapping{{"cpu", "10m"}, {"memory", "16Mi"}}}}},
			{"securityContext", containerSecurity()},
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
