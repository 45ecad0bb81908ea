package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/vllm"
)

// Export formats of `frontier export`.
const (
	FormatVLLMArgs = "vllm-args" // a `vllm serve` command line
	FormatVLLMYAML = "vllm-yaml" // a file for `vllm serve --config`
	FormatDocker   = "docker"    // a `docker run` line with the vllm/vllm-openai image
	FormatK8s      = "k8s"       // a Kubernetes Deployment
)

// ExportFormats lists the export formats.
func ExportFormats() []string {
	return []string{FormatVLLMArgs, FormatVLLMYAML, FormatDocker, FormatK8s}
}

// ErrUnsupportedEngine is returned when a study's engine has no `vllm serve` equivalent.
var ErrUnsupportedEngine = errors.New("export writes vLLM configurations; this study's engine is not vLLM or its simulator")

// ErrUnknownFormat is returned for an export format that does not exist.
var ErrUnknownFormat = errors.New("unknown export format")

// vllmImage is the official vLLM OpenAI-compatible server image.
const vllmImage = "vllm/vllm-openai"

func checkEngine(rec *record.Study) error {
	switch rec.Engine {
	case "vllm", "sim", "":
		return nil
	}
	return fmt.Errorf("engine %q: %w", rec.Engine, ErrUnsupportedEngine)
}

// ServeArgs returns the `vllm serve` command of a trial: vllm, serve, the model and the
// arguments the trial's engine was started with, as its provenance recorded them (without
// what the launcher added for that launch: its port, host and served name, the simulator's
// own flags); for a trial with no recorded command, the command the launcher builds from
// the study's engine arguments and the trial's knobs. Secret values never appear in it.
func ServeArgs(rec *record.Study, t *record.Trial) ([]string, error) {
	if err := checkEngine(rec); err != nil {
		return nil, err
	}
	c, err := trialCommand(rec, t, "", 0)
	if err != nil {
		return nil, fmt.Errorf("export: trial %d: %w", t.Number, err)
	}
	return c.argv(), nil
}

// envVar is one environment variable of the engine; Secret ones are passed by name only.
type envVar struct {
	Name, Value string
	Secret      bool
}

func engineEnv(rec *record.Study) []envVar {
	var out []envVar
	for _, k := range rec.SecretEnv {
		if _, set := rec.EngineEnv[k]; !set {
			out = append(out, envVar{Name: k, Secret: true})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(rec.EngineEnv)) {
		v := rec.EngineEnv[k]
		secret := isSecretName(k) || v == redacted || scrub(v) != v
		if k == hfCacheEnv {
			continue // the export mounts its own cache
		}
		if secret {
			v = ""
		}
		out = append(out, envVar{Name: k, Value: v, Secret: secret})
	}
	return out
}

// Export writes trial t of a study in one of the export formats.
func Export(w io.Writer, rec *record.Study, t *record.Trial, format string) error {
	if t == nil {
		return errors.New("export: no trial")
	}
	if err := checkEngine(rec); err != nil {
		return err
	}
	if err := checkExportable(rec, t); err != nil {
		return err
	}
	if d, ok := disaggOf(t); ok && (format == FormatVLLMYAML || format == FormatDocker) {
		return fmt.Errorf("trial %d is a disaggregated deployment (%s): export it with --format %s (a command line per instance and the router's) or %s (a Deployment per role and the router)",
			t.Number, d, FormatVLLMArgs, FormatK8s)
	}
	bw := bufio.NewWriter(w)
	var err error
	switch format {
	case FormatVLLMArgs:
		err = exportArgs(bw, rec, t)
	case FormatVLLMYAML:
		err = exportYAML(bw, rec, t)
	case FormatDocker:
		err = exportDocker(bw, rec, t)
	case FormatK8s:
		err = exportK8s(bw, rec, t)
	default:
		return fmt.Errorf("%w %q: use one of %s", ErrUnknownFormat, format, strings.Join(ExportFormats(), ", "))
	}
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// ServeLine returns the `vllm serve` command of a trial as one shell line, with the engine's
// non-secret environment in front.
func ServeLine(rec *record.Study, t *record.Trial) (string, error) {
	argv, err := ServeArgs(rec, t)
	if err != nil {
		return "", err
	}
	return envShellLine(rec, nil, argv), nil
}

// envShellLine is argv as one shell line, with the instance's own environment (extra) and
// the engine's non-secret environment in front; a variable of extra replaces the engine's
// of the same name.
func envShellLine(rec *record.Study, extra []envVar, argv []string) string {
	// Assignments in front of the command: NAME=value, the value quoted (a quoted NAME=
	// would be a command's name, not an assignment). A name the shell cannot assign goes
	// through env(1), which takes any NAME=value word.
	env := slices.Clone(extra)
	for _, e := range engineEnv(rec) {
		own := slices.ContainsFunc(extra, func(x envVar) bool { return x.Name == e.Name })
		if !e.Secret && !own {
			env = append(env, e)
		}
	}
	plain := true
	for _, e := range env {
		plain = plain && shellName(e.Name)
	}
	var words []string
	if !plain {
		words = append(words, "env")
	}
	for _, e := range env {
		if plain {
			words = append(words, e.Name+"="+shellQuote(e.Value))
		} else {
			words = append(words, shellQuote(e.Name+"="+e.Value))
		}
	}
	for _, a := range argv {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

func exportArgs(w io.Writer, rec *record.Study, t *record.Trial) error {
	if d, ok := disaggOf(t); ok {
		return exportArgsDisagg(w, rec, t, d)
	}
	line, err := ServeLine(rec, t)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, line)
	return err
}

// trialNote is the comment line that says where an export comes from. The study's name is
// anyone's text (a --study flag, a shared database): it is shown printable, quoted with its
// control characters escaped when it has any, so that it cannot end the comment.
func trialNote(rec *record.Study, t *record.Trial) string {
	s := fmt.Sprintf("trial %d of study %s (%s)", t.Number, printable(rec.Study), printable(string(t.State)))
	if t.Simulated {
		s += ", numbers simulated by frontier's performance model"
	}
	return s
}

func exportYAML(w io.Writer, rec *record.Study, t *record.Trial) error {
	c, err := trialCommand(rec, t, "", 0)
	if err != nil {
		return fmt.Errorf("export: trial %d: %w", t.Number, err)
	}
	entries, cli := configEntries(c.line, c.args)
	fmt.Fprintf(w, "# vllm serve --config FILE: %s\n", trialNote(rec, t))
	if len(cli) > 0 {
		fmt.Fprintln(w, "# vLLM drops false booleans from a config file, and these are not options of the")
		fmt.Fprintln(w, "# file; pass them on the command line:")
		fmt.Fprintf(w, "#   vllm serve --config FILE %s\n", shellLine(cli))
	}
	fmt.Fprintf(w, "model: %s\n", yamlString(rec.Model))
	for _, e := range entries {
		fmt.Fprintf(w, "%s: %s\n", yamlKey(e.key), e.value)
	}
	return nil
}

func imageTag(rec *record.Study, t *record.Trial) string {
	if t.Provenance != nil {
		if v := strings.TrimPrefix(strings.TrimSpace(t.Provenance.Launch.EngineVersion), "v"); v != "" && safeTag(v) && rec.Engine == "vllm" {
			return vllmImage + ":v" + v
		}
	}
	// No vLLM measured this trial (the simulator stands for the current line): the current
	// line's first release, never a moving tag.
	return vllmImage + ":v" + vllm.Current + ".0"
}

func safeTag(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return len(s) <= 120
}

func exportDocker(w io.Writer, rec *record.Study, t *record.Trial) error {
	argv, err := ServeArgs(rec, t)
	if err != nil {
		return err
	}
	words := []string{"docker", "run", "--rm", "--gpus", strconv.Itoa(gpus(t)), "--ipc=host", "-p", "8000:8000",
		"-v", `"$HOME/.cache/huggingface:/root/.cache/huggingface"`}
	for _, e := range engineEnv(rec) {
		if e.Secret {
			// Passed by name: docker takes the value from the caller's environment.
			words = append(words, "-e", shellQuote(e.Name))
		} else {
			words = append(words, "-e", shellQuote(e.Name+"="+e.Value))
		}
	}
	words = append(words, "--entrypoint", "vllm", imageTag(rec, t))
	for _, a := range argv[1:] { // "serve", the model and the flags
		words = append(words, shellQuote(a))
	}
	fmt.Fprintf(w, "# %s\n", trialNote(rec, t))
	_, err = fmt.Fprintln(w, strings.Join(words, " "))
	return err
}

// hfCacheEnv is where Hugging Face keeps downloaded models; exports mount their own cache.
const hfCacheEnv = "HF_HOME"

// offlineEnv are the variables that forbid downloads. A Kubernetes pod starts with an empty
// model cache, so they are left out of that export.
var offlineEnv = []string{"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"}

// Per-GPU resource requests of the Kubernetes export: vLLM runs an API server, an engine
// core and one worker per GPU, each a busy process, and holds the weights in host memory
// while it loads them; the vLLM production-stack Helm chart asks for similar amounts.
const (
	k8sCPUPerGPU       = 4
	k8sMemoryGiBPerGPU = 32
)

// pinnedHostGiB is the host memory a trial's KV offloading pins beyond the per-GPU request:
// kv_offloading_size GiB for every data-parallel engine core (each pins its own buffer,
// vLLM's OffloadingConnector with cpu_bytes_to_use), rounded up. Pinned pages count against
// the container's memory limit, so a request without them would have the pod killed at
// start.
func pinnedHostGiB(t *record.Trial) int {
	size, _ := knobFloat(t.Config["kv_offloading_size"])
	if size <= 0 {
		return 0
	}
	dp := 1.0
	if v, ok := knobFloat(t.Config["data_parallel_size"]); ok && v > 1 {
		dp = v
	}
	return int(math.Ceil(size * dp))
}

func exportK8s(w io.Writer, rec *record.Study, t *record.Trial) error {
	if d, ok := disaggOf(t); ok {
		return exportK8sDisagg(w, rec, t, d)
	}
	argv, err := ServeArgs(rec, t)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# %s\n", trialNote(rec, t))
	return writeK8sEngine(w, rec, t, k8sEngine{name: dnsLabel("vllm-" + rec.Study), secretName: dnsLabel("vllm-"+rec.Study) + "-secrets",
		replicas: 1, argv: argv, gpus: gpus(t)})
}

// k8sEngine is one Deployment of vLLM in the Kubernetes export, with its model cache: the
// trial's engine, or one role of a disaggregated deployment (extraEnv and extraPorts are
// then the NIXL side channel's).
type k8sEngine struct {
	name, secretName string
	replicas         int
	argv             []string
	gpus             int
	extraEnv         string
	extraPorts       string
}

// writeK8sEngine writes a Deployment of vLLM and its model cache's claim.
func writeK8sEngine(w io.Writer, rec *record.Study, t *record.Trial, ke k8sEngine) error {
	argv, n, name := ke.argv, ke.gpus, ke.name
	var secrets []string
	for _, e := range engineEnv(rec) {
		if e.Secret {
			secrets = append(secrets, e.Name)
		}
	}
	if len(secrets) > 0 {
		shown := make([]string, len(secrets))
		for i, s := range secrets {
			shown[i] = printable(s)
		}
		fmt.Fprintf(w, "# The secrets %s come from the Secret %s:\n#   kubectl create secret generic %s", strings.Join(shown, ", "), ke.secretName, ke.secretName)
		for _, s := range secrets {
			fmt.Fprintf(w, " %s", shellQuote("--from-literal="+s+"=..."))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "# The model is downloaded into the volume %s on the first start.\n", name+"-model-cache")
	fmt.Fprintf(w, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  labels:
    app.kubernetes.io/name: %[1]s
  annotations:
    frontier.study: %[2]s
    frontier.trial: "%[3]d"
spec:
  replicas: %[5]d
  selector:
    matchLabels:
      app.kubernetes.io/name: %[1]s
  template:
    metadata:
      labels:
        app.kubernetes.io/name: %[1]s
    spec:
      containers:
        - name: vllm
          image: %[4]s
          command: ["vllm", "serve"]
          args:
`, name, yamlString(rec.Study), t.Number, imageTag(rec, t), ke.replicas)
	// Kubernetes expands $(VAR) in a container's args and env values: every $ is doubled so
	// that each reaches vLLM as it was measured.
	for _, a := range argv[2:] {
		fmt.Fprintf(w, "            - %s\n", yamlString(k8sLiteral(a)))
	}
	fmt.Fprintln(w, "          env:")
	fmt.Fprintf(w, "            - name: %s\n              value: %s\n", hfCacheEnv, yamlString("/models/huggingface"))
	for _, e := range engineEnv(rec) {
		if slices.Contains(offlineEnv, e.Name) {
			continue
		}
		fmt.Fprintf(w, "            - name: %s\n", yamlString(e.Name))
		if e.Secret {
			fmt.Fprintf(w, "              valueFrom:\n                secretKeyRef:\n                  name: %s\n                  key: %s\n",
				ke.secretName, yamlString(e.Name))
		} else {
			fmt.Fprintf(w, "              value: %s\n", yamlString(k8sLiteral(e.Value)))
		}
	}
	fmt.Fprint(w, ke.extraEnv)
	fmt.Fprintf(w, `          ports:
            - name: http
              containerPort: 8000
%[6]s          resources:
            requests:
              cpu: "%[2]d"
              memory: %[3]dGi
              nvidia.com/gpu: %[1]d
            limits:
              memory: %[3]dGi
              nvidia.com/gpu: %[1]d
          startupProbe:
            httpGet:
              path: /health
              port: http
            periodSeconds: 10
            failureThreshold: 180
          readinessProbe:
            httpGet:
              path: /health
              port: http
            periodSeconds: 10
            failureThreshold: 3
          livenessProbe:
            httpGet:
              path: /health
              port: http
            periodSeconds: 15
            failureThreshold: 4
          volumeMounts:
            - name: model-cache
              mountPath: /models
            - name: shm
              mountPath: /dev/shm
      volumes:
        - name: model-cache
          persistentVolumeClaim:
            claimName: %[4]s
        - name: shm
          emptyDir:
            medium: Memory
            sizeLimit: 16Gi
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %[4]s
spec:
  accessModes: ["ReadWriteOnce"]
  resources:
    requests:
      storage: %[5]dGi
`, n, k8sCPUPerGPU*n, k8sMemoryGiBPerGPU*n+pinnedHostGiB(t), name+"-model-cache", modelCacheGiB, ke.extraPorts)
	return nil
}

// modelCacheGiB sizes the model cache volume: room for the weights of a 70B model in BF16
// (about 140 GB) and a second revision.
const modelCacheGiB = 300

// DNSLabel turns s into a Kubernetes name of at most maxLen characters (63 for a DNS
// label): lower case letters, digits and single dashes, starting and ending with an
// alphanumeric; "" when s has no letter or digit.
func DNSLabel(s string, maxLen int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > maxLen {
		out = strings.Trim(out[:maxLen], "-")
	}
	return out
}

// dnsLabel is DNSLabel for a whole name, "vllm" when s gives none.
func dnsLabel(s string) string {
	if out := DNSLabel(s, 63); out != "" {
		return out
	}
	return "vllm"
}

// yamlString quotes a string for YAML as a double-quoted scalar: printable characters as
// they are, and every other one (control characters, line and paragraph separators,
// bidirectional overrides) as a \x, \u or \U escape, which YAML reads back as the same
// character. Strings that reach an export are valid UTF-8 (checkExportable).
func yamlString(s string) string {
	return strconv.Quote(s)
}

// yamlKey is a mapping key: as it is when it is a plain option name, else quoted.
func yamlKey(k string) string {
	for i, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' && i > 0) {
			return yamlString(k)
		}
	}
	if k == "" {
		return yamlString(k)
	}
	return k
}

// k8sLiteral escapes s for a Kubernetes container's command, args or env value, where
// $(VAR) is replaced by the variable's value and $$ by $: every $ is doubled, so the
// container gets s exactly.
func k8sLiteral(s string) string {
	return strings.ReplaceAll(s, "$", "$$")
}

// Printable is s as it is when every character is printable, else s quoted with Go's
// escapes (\n, \x1b, \u2028...): for text from a study in a comment or on a terminal, where
// a newline would end the comment and an escape sequence would drive the terminal.
func Printable(s string) string { return printable(s) }

func printable(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// ErrUnexportable is a string of a study that no export could carry as it was measured: a
// NUL byte (which no command line or environment can hold) or bytes that are not UTF-8 (which
// YAML cannot hold).
var ErrUnexportable = errors.New("cannot be exported as it is")

// checkExportable refuses a trial whose command (the plan's arguments, the recorded command
// lines), environment or knob names hold a NUL or bytes that are not UTF-8, naming the
// field; every other string is escaped for its artefact.
func checkExportable(rec *record.Study, t *record.Trial) error {
	check := func(what, s string) error {
		switch {
		case strings.IndexByte(s, 0) >= 0:
			return fmt.Errorf("export: %s %s holds a NUL byte, which no command line can pass: %w", what, printable(s), ErrUnexportable)
		case !utf8.ValidString(s):
			return fmt.Errorf("export: %s %s is not UTF-8 text: %w", what, printable(s), ErrUnexportable)
		}
		return nil
	}
	errs := []error{check("the model", rec.Model)}
	for i, a := range rec.EngineArgs {
		errs = append(errs, check(fmt.Sprintf("engine argument %d", i+1), a))
	}
	for k, v := range rec.EngineEnv {
		errs = append(errs, check("the environment variable", k), check("the value of environment variable "+printable(k), v))
	}
	for _, k := range rec.SecretEnv {
		errs = append(errs, check("the secret variable", k))
	}
	for k, v := range t.Config {
		errs = append(errs, check("the knob", k), check("the value of knob "+printable(k), knobString(v)))
	}
	if t.Provenance != nil {
		launches := append([]record.Launch{t.Provenance.Launch}, t.Provenance.Launch.Instances...)
		for _, l := range launches {
			for i, a := range l.Command {
				errs = append(errs, check(fmt.Sprintf("argument %d of the recorded command", i+1), a))
			}
		}
	}
	return errors.Join(errs...)
}

// shellLine writes argv as one POSIX shell command line that runs it as it was run: each word
// quoted when it needs it, an empty argument as two single quotes.
func shellLine(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = shellQuote(a)
	}
	return strings.Join(words, " ")
}

// shellQuote quotes a word for a POSIX shell when it needs it: in single quotes, or, for a
// word with a character that is not printable (a newline, an escape, a bidirectional
// override), in $'...' with every such byte as \xHH, so that the line stays one line and
// shows no control character (POSIX.1-2024, bash, zsh, ksh and busybox sh read $'...').
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if printable(s) != s {
		return dollarQuote(s)
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellName reports whether s is a name a POSIX shell can assign: a letter or underscore,
// then letters, digits and underscores.
func shellName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// dollarQuote quotes s as $'...': backslash and single quote escaped, printable characters as
// they are, every byte of the others as \xHH.
func dollarQuote(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r != utf8.RuneError && strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}
