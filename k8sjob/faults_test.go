package k8sjob

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/frontier-llm/frontier/k8sjob/kubelettest"
	"github.com/frontier-llm/frontier/plan"
)

// quickstartWith writes the quickstart plan with extra text before it (variables) into a
// new folder, and returns its path.
func quickstartWith(t *testing.T, before string) string {
	t.Helper()
	src, err := os.ReadFile("../examples/quickstart.hcl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.hcl")
	if err := os.WriteFile(path, []byte(before+string(src)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// allStrings lists every string of a manifest as Kubernetes reads it (keys and values),
// with every ConfigMap value also read as the plan reads it where it is HCL or JSON.
func allStrings(t *testing.T, out string) []string {
	t.Helper()
	var strs []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			strs = append(strs, x, kubelettest.Expand(x, nil))
			strs = append(strs, hclStrings([]byte(x))...)
			strs = append(strs, jsonStrings([]byte(x))...)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				strs = append(strs, k)
				walk(e)
			}
		}
	}
	for _, doc := range strings.Split(out, "\n---\n") {
		var v any
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatalf("not YAML: %v", err)
		}
		walk(v)
	}
	return strs
}

// TestASecretIsFoundWhateverItsEscapes gives k8s-job secrets that hold a quote, a backslash
// or are written with a JSON or HCL escape, where the manifests would carry them, and a
// variable file that sets a sensitive variable: each is refused, naming where, and nothing
// is written. The old check compared the raw value with the escaped YAML and wrote every one
// of them.
func TestASecretIsFoundWhateverItsEscapes(t *testing.T) {
	t.Parallel()
	const sensitive = "variable \"key\" {\n  default   = \"\"\n  sensitive = true\n}\n\nvariable \"note\" {\n  default = \"\"\n}\n\n"
	const written = "the value of a secret would be written"
	tests := []struct {
		name    string
		plan    string // before the quickstart
		varFile string // its name, "" for none
		content string
		vars    []string
		environ []string
		secret  string
		want    []string // what the error says
	}{
		{name: "a JSON variable file that sets a sensitive variable", varFile: "vars.json", content: `{"key": "\u0073ecret-value-9001"}`,
			secret: "secret-value-9001", want: []string{"vars.json sets the sensitive variable \"key\"", "FRONTIER_VAR_key"}},
		{name: "an HCL variable file that sets a sensitive variable to a short value", varFile: "vars.hcl", content: `key = "pw"` + "\n",
			want: []string{"vars.hcl sets the sensitive variable \"key\""}},
		{name: "an environment secret in a JSON variable file, with a \\u escape", varFile: "vars.json", content: `{"note": "\u0073ecret-token-9001"}`,
			environ: []string{"HF_TOKEN=secret-token-9001"}, secret: "secret-token-9001", want: []string{written, "vars.json"}},
		{name: "an environment secret in an HCL variable file, with a quote and a backslash", varFile: "vars.hcl", content: `note = "pa\"ss\\word-42"` + "\n",
			environ: []string{`HF_TOKEN=pa"ss\word-42`}, secret: `pa"ss\word-42`, want: []string{written, "vars.hcl"}},
		{name: "an environment secret in the plan, with a \\u escape", plan: "variable \"other\" {\n  default = \"s\\u0065cret-value-77\"\n}\n",
			environ: []string{"HF_TOKEN=secret-value-77"}, secret: "secret-value-77", want: []string{written, "plan.hcl (the plan)"}},
		{name: "an environment secret in a plain -var, with a quote", vars: []string{`note=tok"en\x-12345`},
			environ: []string{`HF_TOKEN=tok"en\x-12345`}, secret: `tok"en\x-12345`, want: []string{written, "Job frontier-quickstart-", "args"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := quickstartWith(t, sensitive+tc.plan)
			var varFiles []string
			if tc.varFile != "" {
				vf := filepath.Join(filepath.Dir(path), tc.varFile)
				if err := os.WriteFile(vf, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
				varFiles = []string{vf}
			}
			p := loadPlan(t, path, plan.LoadOptions{Vars: tc.vars, VarFiles: varFiles, Environ: tc.environ})
			var buf bytes.Buffer
			err := Write(&buf, p, Options{Workers: 1, Version: "0.1.0", Vars: tc.vars, VarFiles: varFiles, Environ: tc.environ})
			if err == nil {
				leaked := tc.secret != "" && slices.ContainsFunc(allStrings(t, buf.String()), func(s string) bool { return strings.Contains(s, tc.secret) })
				t.Fatalf("k8s-job wrote the manifests (the secret readable in them: %v)", leaked)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want one saying %q", err, w)
				}
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("the error shows the secret: %q", err)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes on a refusal", buf.Len())
			}
		})
	}
	// The way that works: the sensitive value from the Secret, as FRONTIER_VAR_key.
	t.Run("the value from the Secret", func(t *testing.T) {
		t.Parallel()
		path := quickstartWith(t, sensitive)
		environ := []string{plan.EnvVarPrefix + `key=pa"ss\word-42`}
		p := loadPlan(t, path, plan.LoadOptions{Environ: environ})
		var buf bytes.Buffer
		if err := Write(&buf, p, Options{Workers: 1, Version: "0.1.0", Environ: environ}); err != nil {
			t.Fatal(err)
		}
		for _, s := range allStrings(t, buf.String()) {
			if strings.Contains(s, `pa"ss\word-42`) {
				t.Fatalf("the secret is written: %q", s)
			}
		}
		if !strings.Contains(buf.String(), "--from-literal="+plan.EnvVarPrefix+"key=") {
			t.Errorf("the comments do not say to put the variable in the Secret")
		}
	})
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// TestObjectNamesOfTwoStudiesNeverCollide: names that fold to one DNS label, share their
// first characters or have none of its characters each get names of their own; one study
// kept in one database keeps its name whatever the URL's password, user or options.
func TestObjectNamesOfTwoStudiesNeverCollide(t *testing.T) {
	t.Parallel()
	long := "customer-support-assistant-evaluation-for-the-chat"
	pairs := []struct{ a, b, storageA, storageB string }{
		{a: long + "-v1", b: long + "-v2"},
		{a: "Chat", b: "chat"},
		{a: "a_b", b: "a-b"},
		{a: "日本語のチャット", b: "中文聊天"},
		{a: "study", b: "study", storageA: "postgres://u@db-a:5432/s", storageB: "postgres://u@db-b:5432/s"},
		{a: "study", b: "study", storageA: "postgres://u@db:5432/one", storageB: "postgres://u@db:5432/two"},
		{a: "study", b: "study", storageB: "postgres://u@db:5432/s"},
	}
	for _, pr := range pairs {
		na, nb := Name(pr.a, pr.storageA), Name(pr.b, pr.storageB)
		if na == nb {
			t.Errorf("%q (%q) and %q (%q) share the name %s", pr.a, pr.storageA, pr.b, pr.storageB, na)
		}
		for _, n := range []string{na, nb} {
			if len(n) > 43 || !dnsLabel.MatchString(n) {
				t.Errorf("%q is not a DNS label of at most 43 characters", n)
			}
		}
	}
	same := []string{"postgres://u:pw1@DB:5432/s?sslmode=require", "postgresql://v:pw2@db/s", "postgres://u:p%40w@db:5432/s"}
	for _, s := range same[1:] {
		if Name("study", s) != Name("study", same[0]) {
			t.Errorf("%s and %s name one database, but the study's objects are named %s and %s", same[0], s, Name("study", same[0]), Name("study", s))
		}
	}

	// Two studies whose names share their first 50 characters, in one namespace: no
	// object of one has the name of an object of the other, and the names Kubernetes derives
	// (a pod's host name, the StatefulSet's revision label) are DNS labels.
	names := map[string]string{}
	for _, study := range []string{long + "-v1", long + "-v2"} {
		path := quickstartWith(t, "")
		src, _ := os.ReadFile(path)
		text := strings.Replace(string(src), `study "quickstart" {`, fmt.Sprintf("study %q {", study), 1)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		p := loadPlan(t, path, plan.LoadOptions{})
		var buf bytes.Buffer
		if err := Write(&buf, p, Options{Workers: MaxWorkers, Version: "0.1.0"}); err != nil {
			t.Fatal(err)
		}
		d := decode(t, buf.String())
		var objs []string
		objs = append(objs, d.sa[0].Name, d.configMaps[0].Name, d.jobs[0].Name, d.statefulSets[0].Name, d.services[0].Name)
		for _, c := range d.claims {
			objs = append(objs, c.Name)
		}
		for _, o := range objs {
			if other, ok := names[o]; ok && other != study {
				t.Errorf("%s is an object of both %q and %q", o, other, study)
			}
			names[o] = study
		}
		if host := fmt.Sprintf("%s-%d", d.jobs[0].Name, MaxWorkers-1); len(host) > 63 || !dnsLabel.MatchString(host) {
			t.Errorf("the last index's host name %s is not a DNS label", host)
		}
		if rev := d.statefulSets[0].Name + "-0123456789"; len(rev) > 63 {
			t.Errorf("the StatefulSet's revision label %s is longer than 63 characters", rev)
		}
	}
}

// TestTheDatabasePasswordIsMadeOnceAndKept: the manifests hold no password, so applying
// them again changes nothing: two runs write the same bytes. The comments' command makes
// the Secret when it is missing and leaves it alone when it exists; it is run here twice
// with bash against a stand-in for kubectl that keeps Secrets in a folder.
func TestTheDatabasePasswordIsMadeOnceAndKept(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "../examples/quickstart.hcl", plan.LoadOptions{})
	var first, second bytes.Buffer
	for _, b := range []*bytes.Buffer{&first, &second} {
		if err := Write(b, p, Options{Workers: 2, Version: "0.1.0"}); err != nil {
			t.Fatal(err)
		}
	}
	if first.String() != second.String() {
		t.Errorf("two runs wrote different manifests:\n%s", cmp.Diff(first.String(), second.String()))
	}
	d := decode(t, first.String())
	if len(d.secrets) != 0 {
		t.Fatalf("the manifests hold %d Secrets: applying them again would replace the database's password", len(d.secrets))
	}
	pg := d.services[0].Name
	var line string
	for _, l := range strings.Split(d.header, "\n") {
		if strings.Contains(l, "kubectl create secret generic "+pg+" ") {
			line = strings.TrimSpace(strings.TrimPrefix(l, "#"))
		}
	}
	if line == "" {
		t.Fatalf("the comments do not say how to make the Secret %s:\n%s", pg, d.header)
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("no openssl here to run the comments' command")
	}
	bin, store := t.TempDir(), t.TempDir()
	// The stand-in: "get secret NAME" succeeds when the Secret exists; "create secret
	// generic NAME --from-literal=password=P" refuses an existing one, as kubectl does.
	kubectl := `#!/bin/bash
set -e
case "$1 $2" in
"get secret") test -f "$STORE/$3" ;;
"create secret")
  if [ -f "$STORE/$4" ]; then echo "Error from server (AlreadyExists)" >&2; exit 1; fi
  printf '%s' "${5#--from-literal=password=}" > "$STORE/$4" ;;
*) echo "unexpected: $*" >&2; exit 2 ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(kubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func() string {
		cmd := exec.Command("bash", "-c", line)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "STORE="+store)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		pw, err := os.ReadFile(filepath.Join(store, pg))
		if err != nil {
			t.Fatal(err)
		}
		return string(pw)
	}
	pw1, pw2 := run(), run()
	if !regexp.MustCompile(`^[0-9a-f]{48}$`).MatchString(pw1) {
		t.Errorf("the password made is %q, want 48 hex digits", pw1)
	}
	if pw1 != pw2 {
		t.Errorf("running the command again changed the password")
	}
}

// TestTheDocumentedApplyTakesEveryConfigMapFrontierWrites: the comments give
// `kubectl apply --server-side`, which takes a ConfigMap up to the API server's 1 MiB (a
// plain apply stops at its 256 KiB annotation), and the limit is exactly that: files of
// 1 MiB in all are written, one byte more is refused with the size, the limit and the
// largest file. The comments also say to delete the Job before applying other flags.
func TestTheDocumentedApplyTakesEveryConfigMapFrontierWrites(t *testing.T) {
	t.Parallel()
	path := quickstartWith(t, "variable \"note\" {\n  default = \"\"\n}\n\n")
	planSize := func() int {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return int(fi.Size())
	}()
	for _, extra := range []int{0, 1} {
		vf := filepath.Join(filepath.Dir(path), fmt.Sprintf("big-%d.hcl", extra))
		head := "note = \"x\"\n"
		pad := MaxConfigMapBytes - planSize - len(head) + extra
		body := head + "#" + strings.Repeat("x", pad-2) + "\n"
		if err := os.WriteFile(vf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		p := loadPlan(t, path, plan.LoadOptions{VarFiles: []string{vf}})
		var buf bytes.Buffer
		err := Write(&buf, p, Options{Workers: 1, Version: "0.1.0", VarFiles: []string{vf}})
		if extra == 1 {
			want := fmt.Sprintf("come to %d bytes, more than a ConfigMap holds (%d bytes", MaxConfigMapBytes+1, MaxConfigMapBytes)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), vf) {
				t.Errorf("error %v, want one saying %q and naming %s", err, want, vf)
			}
			continue
		}
		if err != nil {
			t.Fatalf("files of %d bytes in all are refused: %v", MaxConfigMapBytes, err)
		}
		d := decode(t, buf.String())
		total := 0
		for _, v := range d.configMaps[0].Data {
			total += len(v)
		}
		for _, v := range d.configMaps[0].BinaryData {
			total += len(v)
		}
		if total != MaxConfigMapBytes {
			t.Errorf("the ConfigMap holds %d bytes, want %d", total, MaxConfigMapBytes)
		}
		for _, want := range []string{
			"kubectl apply --server-side -f THIS_FILE",
			"field is immutable",
			"kubectl delete job " + d.jobs[0].Name + " --cascade=foreground",
		} {
			if !strings.Contains(d.header, want) {
				t.Errorf("the comments do not say %q:\n%s", want, d.header)
			}
		}
		if regexp.MustCompile(`(?m)kubectl apply -f`).MatchString(d.header) {
			t.Errorf("the comments still give a plain kubectl apply:\n%s", d.header)
		}
	}
}

// restrictedViolations lists what PodSecurity's "restricted" level refuses in a pod
// (https://kubernetes.io/docs/concepts/security/pod-security-standards/, v1.30 and later).
func restrictedViolations(pod corev1.PodSpec) []string {
	var v []string
	psc := pod.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		v = append(v, "host namespaces")
	}
	for _, vol := range pod.Volumes {
		if vol.ConfigMap == nil && vol.EmptyDir == nil && vol.PersistentVolumeClaim == nil && vol.Secret == nil && vol.Projected == nil && vol.DownwardAPI == nil && vol.CSI == nil && vol.Ephemeral == nil {
			v = append(v, "volume "+vol.Name+" of a restricted type")
		}
	}
	if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		v = append(v, "pod runAsUser 0")
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		sc := c.SecurityContext
		if sc == nil {
			v = append(v, c.Name+": no securityContext")
			continue
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			v = append(v, c.Name+": allowPrivilegeEscalation is not false")
		}
		if sc.Privileged != nil && *sc.Privileged {
			v = append(v, c.Name+": privileged")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			v = append(v, c.Name+": capabilities do not drop ALL")
		} else if slices.ContainsFunc(sc.Capabilities.Add, func(c corev1.Capability) bool { return c != "NET_BIND_SERVICE" }) {
			v = append(v, c.Name+": adds capabilities")
		}
		nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (sc.RunAsNonRoot == nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
		if !nonRoot {
			v = append(v, c.Name+": runAsNonRoot is not true")
		}
		if uid := sc.RunAsUser; uid != nil && *uid == 0 || uid == nil && (psc.RunAsUser == nil) {
			// runAsNonRoot with no user: the kubelet refuses an image whose user is root,
			// as vLLM's and Ollama's are.
			v = append(v, c.Name+": no user other than root")
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || (seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault && seccomp.Type != corev1.SeccompProfileTypeLocalhost) {
			v = append(v, c.Name+": no seccomp profile of RuntimeDefault or Localhost")
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				v = append(v, c.Name+": host port")
			}
		}
	}
	return v
}

// TestEveryPodMeetsPodSecurityRestricted: the pods of every example (the workers, their
// init container and the study's PostgreSQL) pass PodSecurity "restricted"; a worker with
// GPUs tolerates the device plugin's taint and, where the plan names a SKU whose node label
// is known, goes only on nodes of that GPU.
func TestEveryPodMeetsPodSecurityRestricted(t *testing.T) {
	t.Parallel()
	examples := t.TempDir()
	if err := os.CopyFS(examples, os.DirFS("../examples")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(examples, "tiny.gguf"), []byte("GGUF\x03\x00\x00\x00stand-in"), 0o644); err != nil {
		t.Fatal(err)
	}
	plans, _ := filepath.Glob(filepath.Join(examples, "*.hcl"))
	plans = append(plans, "") // a vLLM plan that names no SKU
	for _, path := range plans {
		name := filepath.Base(path)
		if path == "" {
			name = "no SKU"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var p *plan.Plan
			if path == "" {
				p = vllmPlanWith(t, `knob "tensor_parallel_size" { values = [1, 2] }`)
			} else {
				p = loadPlan(t, path, plan.LoadOptions{})
			}
			var buf bytes.Buffer
			if err := Write(&buf, p, Options{Workers: 2, Version: "0.1.0"}); err != nil {
				t.Fatal(err)
			}
			d := decode(t, buf.String())
			pods := map[string]corev1.PodSpec{"the workers": d.jobs[0].Spec.Template.Spec}
			for _, s := range d.statefulSets {
				pods["PostgreSQL"] = s.Spec.Template.Spec
			}
			for what, pod := range pods {
				if v := restrictedViolations(pod); len(v) > 0 {
					t.Errorf("%s: PodSecurity \"restricted\" refuses: %s", what, strings.Join(v, "; "))
				}
			}
			pod := d.jobs[0].Spec.Template.Spec
			gpus, resource, err := GPUs(p)
			if err != nil {
				t.Fatal(err)
			}
			tolerates := slices.ContainsFunc(pod.Tolerations, func(tl corev1.Toleration) bool {
				return tl.Key == resource && tl.Operator == corev1.TolerationOpExists && (tl.Effect == "" || tl.Effect == corev1.TaintEffectNoSchedule)
			})
			if gpus > 0 && !tolerates {
				t.Errorf("a worker with %d %s does not tolerate the taint %s: %+v", gpus, resource, resource, pod.Tolerations)
			}
			if gpus == 0 && (len(pod.Tolerations) > 0 || pod.Affinity != nil) {
				t.Errorf("a worker without GPUs tolerates %+v and has affinity %+v", pod.Tolerations, pod.Affinity)
			}
			var products []string
			if a := pod.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
				for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
					for _, e := range term.MatchExpressions {
						if e.Key == "nvidia.com/gpu.product" && e.Operator == corev1.NodeSelectorOpIn {
							products = append(products, e.Values...)
						}
					}
				}
			}
			var want []string
			if gpus > 0 && p.Hardware.SKU == "h100-sxm" {
				want = []string{"NVIDIA-H100-80GB-HBM3"} // the label GPU feature discovery gives an H100 SXM5 80GB
			}
			if diff := cmp.Diff(want, products); diff != "" {
				t.Errorf("the workers' nvidia.com/gpu.product (-want +got):\n%s", diff)
			}
			if len(d.statefulSets) == 1 {
				if len(pod.InitContainers) != 1 {
					t.Fatalf("%d init containers, want the wait for the database", len(pod.InitContainers))
				}
				script := pod.InitContainers[0].Command[2]
				if want := waitScript(d.services[0].Name, 5432, int(DatabaseWait/time.Second)); kubelettest.Expand(script, nil) != want {
					t.Errorf("the init container runs\n%s\nwant\n%s", kubelettest.Expand(script, nil), want)
				}
			}
		})
	}
}

// TestTheWaitForTheDatabaseEnds runs the init container's script with bash: against a
// port that takes connections it ends at once with 0; against one that refuses them it
// gives up after its deadline with 1, naming the database.
func TestTheWaitForTheDatabaseEnds(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash here")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// A port that refuses: one that was listening and is closed.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln2.Addr().(*net.TCPAddr).Port
	ln2.Close()
	t.Cleanup(func() { ln.Close() })

	run := func(port, secs int) (int, string, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", waitScript("127.0.0.1", port, secs))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stderr.String(), time.Since(start)
	}
	if code, stderr, took := run(open, 2); code != 0 || took > 30*time.Second {
		t.Errorf("against a port that answers: exit %d after %v, want 0 at once; stderr %q", code, took, stderr)
	}
	code, stderr, took := run(closed, 2)
	if code != 1 || !strings.Contains(stderr, "the study database 127.0.0.1 did not answer within 2s") {
		t.Errorf("against a port that refuses: exit %d, stderr %q; want 1 and the database named", code, stderr)
	}
	if took < 2*time.Second {
		t.Errorf("gave up after %v, before its deadline of 2s", took)
	}
}

// TestKnobValuesPastAPodAreRefusedNotWrapped: the largest values of the parallelism and
// KV offloading knobs multiply into the pod's requests; a product past what a pod may
// request is refused with the knobs named, where it used to wrap around into no GPU or a
// negative memory. The largest allowed still writes.
func TestKnobValuesPastAPodAreRefusedNotWrapped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		knobs string
		want  string // "" for written
		gpus  int64
		mem   int64 // GiB
	}{
		{"tensor parallel size past int64", `knob "tensor_parallel_size" { values = [1, 4611686018427387904] }
knob "data_parallel_size" { values = [1, 4] }`, "more than one worker's pod may request (64)", 0, 0},
		{"65 GPUs", `knob "tensor_parallel_size" { values = [1, 65] }`, "needs 65 GPUs (tensor_parallel_size 65)", 0, 0},
		{"64 GPUs", `knob "tensor_parallel_size" { values = [8] }
knob "data_parallel_size" { values = [8] }`, "", 64, 64 * memoryGiBPerGPU},
		{"KV offloading past int64", `knob "kv_offloading_size" { values = [0, 1e18] }
knob "data_parallel_size" { values = [1, 16] }`, "pins 1.6e+19 GiB of host memory", 0, 0},
		{"KV offloading past a node", `knob "kv_offloading_size" { values = [0, 20000] }`, "more than it may request (16384 GiB)", 0, 0},
		{"memory past a node in all", `knob "kv_offloading_size" { values = [0, 16000] }
knob "tensor_parallel_size" { values = [32] }`, "would request 17024 GiB of host memory", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := vllmPlanWith(t, tc.knobs)
			var buf bytes.Buffer
			err := Write(&buf, p, Options{Workers: 1, Version: "0.1.0"})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v, want one saying %q", err, tc.want)
				}
				if buf.Len() != 0 {
					t.Errorf("wrote %d bytes on a refusal", buf.Len())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := decode(t, buf.String()).jobs[0].Spec.Template.Spec.Containers[0].Resources
			if g := res.Limits["nvidia.com/gpu"]; g.Value() != tc.gpus {
				t.Errorf("%s GPUs, want %d", g.String(), tc.gpus)
			}
			if m := res.Requests.Memory().Value() >> 30; m != tc.mem {
				t.Errorf("memory %dGi, want %dGi", m, tc.mem)
			}
		})
	}
}
