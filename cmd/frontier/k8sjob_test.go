package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/frontier-llm/frontier/k8sjob/kubelettest"
	"github.com/frontier-llm/frontier/record"
)

// podShim is what the test runs as a Job's pod, in a UTS and PID namespace of its own: it
// sets the host name the Job gives the pod's index, then becomes the container's command, as
// the first process of the namespace, as in a pod:
//
//	frontier-pod HOSTNAME COMMAND [ARGS...]
func podShim() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: frontier-pod HOSTNAME COMMAND [ARGS...]")
		os.Exit(2)
	}
	if err := syscall.Sethostname([]byte(os.Args[1])); err != nil {
		fmt.Fprintln(os.Stderr, "frontier-pod: set the host name:", err)
		os.Exit(2)
	}
	exe, err := exec.LookPath(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "frontier-pod:", err)
		os.Exit(2)
	}
	err = syscall.Exec(exe, os.Args[2:], os.Environ())
	fmt.Fprintln(os.Stderr, "frontier-pod: exec:", err)
	os.Exit(2)
}

// pod is one of the Job's pods, emulated: the container's command and args as the kubelet
// expands them, its env, the ConfigMap's files at the mount path, and a host name per index.
type pod struct {
	index    int
	hostname string
	cmd      *exec.Cmd
	stdout   bytes.Buffer
	done     chan struct{}
	exit     int

	mu     sync.Mutex
	stderr bytes.Buffer
	// lines are every stderr line the pod printed, none dropped; changed is closed (and
	// replaced) at each new line.
	lines   []string
	changed chan struct{}
}

// namespaces are the clone flags of a pod: a UTS namespace (its own host name) and a PID
// namespace (frontier its first process, as the container's command is). As root they need
// nothing else; otherwise a user namespace maps the user to root in it.
func namespaceAttr(userNS bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUTS | syscall.CLONE_NEWPID, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if userNS {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	return a
}

// podNamespaces finds how this machine gives a process its own host name and process ids.
func podNamespaces(t *testing.T) *syscall.SysProcAttr {
	t.Helper()
	for _, userNS := range []bool{false, true} {
		cmd := exec.Command("frontier-pod", "probe", "true")
		cmd.SysProcAttr = namespaceAttr(userNS)
		if out, err := cmd.CombinedOutput(); err == nil {
			return namespaceAttr(userNS)
		} else if userNS {
			msg := fmt.Sprintf("this machine gives a process no UTS and PID namespace of its own (%v: %s): run the test as root or where user namespaces are allowed", err, out)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return nil
}

// jobPods reads the Job and the ConfigMap of k8s-job's output strictly, writes the
// ConfigMap's files where its volume mounts them (under root), and returns a function that
// starts the pod of an index the way the Job does.
type jobEmulator struct {
	t        *testing.T
	job      batchv1.Job
	root     string
	storage  string
	attr     *syscall.SysProcAttr
	pathEnv  string
	restarts map[int]int
}

func newJobEmulator(t *testing.T, manifests, storage string) *jobEmulator {
	t.Helper()
	e := &jobEmulator{t: t, root: t.TempDir(), storage: storage, attr: podNamespaces(t), restarts: map[int]int{}}
	var cm corev1.ConfigMap
	jobs := 0
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var probe struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &probe); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		var err error
		switch probe.Kind {
		case "Job":
			err = yaml.UnmarshalStrict([]byte(doc), &e.job)
			jobs++
		case "ConfigMap":
			err = yaml.UnmarshalStrict([]byte(doc), &cm)
		}
		if err != nil {
			t.Fatalf("the %s does not decode strictly: %v\n%s", probe.Kind, err, doc)
		}
	}
	if jobs != 1 {
		t.Fatalf("%d Jobs in the manifests, want 1", jobs)
	}
	spec := e.job.Spec.Template.Spec
	for _, v := range spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		for _, it := range v.ConfigMap.Items {
			path := filepath.Join(e.root, "study", filepath.FromSlash(it.Path))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			data, ok := cm.Data[it.Key]
			if !ok {
				t.Fatalf("the volume mounts the key %s, which the ConfigMap does not hold", it.Key)
			}
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.pathEnv = filepath.Dir(frontierExe(t)) + string(os.PathListSeparator) + os.Getenv("PATH")
	return e
}

// local maps a path inside the container to where the test keeps that volume for pod: the
// ConfigMap is shared, every other volume is the pod's own (an emptyDir or a claim).
func (e *jobEmulator) local(p string, podDir string) string {
	c := e.job.Spec.Template.Spec.Containers[0]
	for _, m := range c.VolumeMounts {
		if p == m.MountPath || strings.HasPrefix(p, m.MountPath+"/") {
			base := filepath.Join(podDir, m.Name)
			if m.Name == "plan" {
				base = filepath.Join(e.root, "study")
			}
			return base + strings.TrimPrefix(p, m.MountPath)
		}
	}
	return p
}

// start starts the pod of index i: a new process each time, under the same host name, as
// the Job controller replaces a pod of an index.
func (e *jobEmulator) start(i int) *pod {
	t := e.t
	t.Helper()
	spec := e.job.Spec.Template.Spec
	c := spec.Containers[0]
	podDir := filepath.Join(e.root, fmt.Sprintf("pod-%d-%d", i, e.restarts[i]))
	e.restarts[i]++
	for _, m := range c.VolumeMounts {
		if m.Name != "plan" {
			if err := os.MkdirAll(filepath.Join(podDir, m.Name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	hostname := fmt.Sprintf("%s-%d", e.job.Name, i) // what the Job controller names an index's pod's host
	// The environment a Job's pod starts with, then the container's, in order: Secrets are
	// the ones the comments say to create (the study database's URL; HF_TOKEN is optional
	// and left out).
	env := map[string]string{"HOSTNAME": hostname, "JOB_COMPLETION_INDEX": strconv.Itoa(i), "PATH": e.pathEnv, "HOME": podDir}
	environ := []string{"HOSTNAME=" + hostname, "JOB_COMPLETION_INDEX=" + strconv.Itoa(i), "PATH=" + e.pathEnv, "HOME=" + podDir}
	for _, ev := range c.Env {
		var v string
		switch {
		case ev.ValueFrom != nil && ev.ValueFrom.SecretKeyRef != nil && ev.Name == "FRONTIER_STORAGE":
			v = e.storage
		case ev.ValueFrom != nil && ev.ValueFrom.SecretKeyRef != nil:
			if ev.ValueFrom.SecretKeyRef.Optional == nil || !*ev.ValueFrom.SecretKeyRef.Optional {
				t.Fatalf("the pods need the Secret key %s/%s", ev.ValueFrom.SecretKeyRef.Name, ev.ValueFrom.SecretKeyRef.Key)
			}
			continue
		case ev.ValueFrom != nil:
			t.Fatalf("env %s from %+v: the test knows only Secrets", ev.Name, ev.ValueFrom)
		default:
			v = e.local(kubelettest.Expand(ev.Value, env), podDir)
		}
		env[ev.Name] = v
		environ = append(environ, ev.Name+"="+v)
	}
	var argv []string
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		argv = append(argv, e.local(kubelettest.Expand(a, env), podDir))
	}
	cmd := exec.Command("frontier-pod", append([]string{hostname}, argv...)...)
	cmd.Dir = e.local(c.WorkingDir, podDir)
	if err := os.MkdirAll(cmd.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Env = environ
	cmd.SysProcAttr = e.attr
	p := &pod{index: i, hostname: hostname, cmd: cmd, changed: make(chan struct{}), done: make(chan struct{}), exit: -1}
	cmd.Stdout = &p.stdout
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.lines = append(p.lines, sc.Text())
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			p.exit = 0
		case errors.As(err, &ee):
			p.exit = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.exit = 128 + int(ws.Signal())
			}
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

func (p *pod) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// until waits until found, called with every stderr line the pod has printed so far, says
// yes; it is called again at each new line. The pod's exit or the deadline d fails the test
// with what.
func (p *pod) until(t *testing.T, what string, d time.Duration, found func(lines []string) bool) {
	t.Helper()
	timeout := time.After(d)
	for {
		p.mu.Lock()
		ok, changed := found(p.lines), p.changed
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-p.done:
			// The last lines may have come with the exit.
			p.mu.Lock()
			ok := found(p.lines)
			p.mu.Unlock()
			if ok {
				return
			}
			t.Fatalf("pod %d exited (%d) before %s; stderr:\n%s", p.index, p.exit, what, p.errText())
		case <-timeout:
			t.Fatalf("pod %d did not print %s within %v; stderr:\n%s", p.index, what, d, p.errText())
		}
	}
}

var (
	trialStartedLine  = regexp.MustCompile(`^trial (\d+) started`)
	trialFinishedLine = regexp.MustCompile(`^(?:\[\d+/\d+\] trial|pre-screen: trial) (\d+) `)
)

// measuring waits until the pod is measuring a trial (it printed the trial's start and not
// its end), and returns the trial's number: the last trial it started, if several run.
func (p *pod) measuring(t *testing.T, d time.Duration) int {
	t.Helper()
	trial := -1
	p.until(t, "a trial started and not finished", d, func(lines []string) bool {
		trial = runningTrial(lines)
		return trial >= 0
	})
	return trial
}

// runningTrial is the last trial lines say started and do not say finished, or -1.
func runningTrial(lines []string) int {
	running := map[int]bool{}
	last := -1
	for _, l := range lines {
		if m := trialStartedLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			running[n], last = true, n
		} else if m := trialFinishedLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			delete(running, n)
		}
	}
	if running[last] {
		return last
	}
	for n := range running {
		return n
	}
	return -1
}

// killMidTrial SIGKILLs the pod while it measures a trial, and returns the trial and the
// time just before the signal. The trial is one the pod's lines said was running a moment
// before; if it ended meanwhile (a fast trial on an idle machine) the next one is taken.
func (p *pod) killMidTrial(t *testing.T, d time.Duration) (int, time.Time) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		trial := p.measuring(t, time.Until(deadline))
		time.Sleep(300 * time.Millisecond) // inside the measurement
		p.mu.Lock()
		still := runningTrial(p.lines) == trial
		p.mu.Unlock()
		if still {
			return trial, p.kill(t)
		}
	}
}

// kill SIGKILLs the pod's first process, which takes down every process of its namespace,
// as a node lost or a container killed for memory, and waits for it.
// It returns the time just before the signal: however long the machine takes to report the
// process's end, the worker's last heartbeat came before it.
func (p *pod) kill(t *testing.T) time.Time {
	t.Helper()
	at := time.Now()
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	return at
}

func (p *pod) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.exit
	case <-time.After(d):
		t.Fatalf("pod %d did not exit within %v; stderr:\n%s", p.index, d, p.errText())
		return -1
	}
}

// TestK8sJobPodsFinishAStudyThroughKillsAndARestart runs the pods of `frontier k8s-job`'s
// Indexed Job as local processes against a throwaway PostgreSQL (scripts/postgres.sh): the
// container's exact command and args as the kubelet expands them, the ConfigMap's files at
// their mount, the environment a Job gives its pods (JOB_COMPLETION_INDEX, the host name of
// the index, each pod in a UTS and PID namespace of its own). The engine is the simulated
// vLLM, a stand-in for the GPUs a pod would hold. Three workers share a 12-trial budget; one
// is SIGKILLed mid-trial and not restarted, and the others take its trial back once the lease
// has passed; another is SIGKILLed mid-trial and restarted under the same host name, and
// takes its own trial back at once. The budget is met exactly, every configuration once,
// every pod that was not killed exits 0, and nothing is left running.
func TestK8sJobPodsFinishAStudyThroughKillsAndARestart(t *testing.T) {
	dbURL, _ := postgresStudyURL(t)
	dir := t.TempDir()
	mk := marker(t.Name())
	const budget = 12
	const lease = 10 * time.Second
	writePlan(t, dir, relPlan{Study: "k8s pods", Model: mk, Trials: budget, Requests: 16,
		Knob: "8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128"})
	gen := frontier(t, dir, nil, "k8s-job", "plan.hcl", "--workers", "3", "--storage", "postgres://user:pw-not-this@db:5432/x", "--lease", lease.String())
	if gen.code != 0 {
		t.Fatalf("k8s-job exited %d: %s", gen.code, gen.stderr)
	}
	if strings.Contains(gen.stdout, "pw-not-this") {
		t.Fatal("the manifests hold the storage password")
	}
	e := newJobEmulator(t, gen.stdout, dbURL)
	if *e.job.Spec.Completions != 3 {
		t.Fatalf("completions %d, want 3", *e.job.Spec.Completions)
	}

	pods := []*pod{e.start(0), e.start(1), e.start(2)}
	// Index 2 dies mid-trial, for good. Its lines, and index 1's while the test waits on
	// index 2, are all kept: each pod's trial is one it was measuring when it was killed.
	lost, killedAt := pods[2].killMidTrial(t, 2*time.Minute)
	// Index 1 dies mid-trial and its pod is replaced: same host name, a new process.
	own, _ := pods[1].killMidTrial(t, 2*time.Minute)
	restarted := e.start(1)

	for _, p := range []*pod{pods[0], restarted} {
		if code := p.wait(t, 3*time.Minute); code != 0 {
			t.Errorf("pod %d exited %d, want 0; stderr:\n%s", p.index, code, p.errText())
		}
	}
	if l := leftBehind(mk, pods[0].cmd.Process.Pid, pods[1].cmd.Process.Pid, pods[2].cmd.Process.Pid, restarted.cmd.Process.Pid); len(l) > 0 {
		t.Errorf("left running: %s", strings.Join(l, "; "))
	}

	rec := study(t, dbURL)
	if got, want := storedSummary(rec), fmt.Sprintf("%d trial(s): %d complete", budget, budget); got != want {
		t.Errorf("the study holds %s, want %s", got, want)
	}
	byNumber := map[int]record.Trial{}
	for _, tr := range rec.Trials {
		byNumber[tr.Number] = tr
	}
	// The lost trial: measured again by a live worker, once the lease had passed.
	if tr := byNumber[lost]; tr.Provenance == nil || tr.Provenance.Launch.Host == pods[2].hostname {
		t.Errorf("trial %d, lost with index 2, was not measured by another worker: %+v", lost, tr.Provenance)
	} else if started := tr.Provenance.Started; started.Before(killedAt.Add(lease*3/4 - 500*time.Millisecond)) {
		// The worker's last beat may have come up to a quarter of the lease before the kill.
		t.Errorf("trial %d was measured again %v after its worker died, within the lease of %v", lost, started.Sub(killedAt), lease)
	}
	if !strings.Contains(pods[0].errText()+restarted.errText(), fmt.Sprintf("trial %d was left running by a process that stopped", lost)) {
		t.Errorf("no live worker says it took trial %d back", lost)
	}
	// The restarted index: it takes back its own trial at start, without waiting for the
	// lease (which another worker would have), and measures it on its own host name. No
	// bound on the time: under load the new process may take a while to start.
	if want := fmt.Sprintf("repaired: trials [%d", own); !strings.Contains(restarted.stdout.String(), want) {
		t.Errorf("the restarted index 1 did not take back its trial %d at start; stdout:\n%s", own, restarted.stdout.String())
	}
	if tr := byNumber[own]; tr.Provenance == nil || tr.Provenance.Launch.Host != restarted.hostname {
		t.Errorf("trial %d of the restarted index was not measured again by it: %+v", own, tr.Provenance)
	}
	if a, b := byNumber[lost].Provenance, byNumber[own].Provenance; a != nil && b != nil {
		t.Logf("trial %d lost with index 2, measured again %v after the kill on %s; trial %d of index 1 measured again on %s",
			lost, a.Started.Sub(killedAt).Round(time.Millisecond), a.Launch.Host, own, b.Launch.Host)
	}
	hosts := map[string]bool{}
	for _, tr := range rec.Trials {
		if tr.Provenance != nil {
			hosts[tr.Provenance.Launch.Host] = true
		}
	}
	for i := 0; i < 2; i++ {
		if h := fmt.Sprintf("%s-%d", e.job.Name, i); !hosts[h] {
			t.Errorf("no trial was measured on %s (hosts: %v)", h, hosts)
		}
	}
}
