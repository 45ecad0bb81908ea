package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/frontier-llm/frontier/vllm"
)

// Bounds of the preflight's probes.
const (
	// DefaultProbeTimeout bounds each probe (`--version`, `--help=all`) of the preflight.
	DefaultProbeTimeout = 2 * time.Minute
	// probeOutputLimit is the most a probe's output may hold: vLLM's --help=all is about
	// 40 KB; a probe that writes more is stopped and refused.
	probeOutputLimit = 4 << 20
	// probeShownBytes is how much of a failing probe's output an error shows.
	probeShownBytes = 2 << 10
)

// Preflight is what the installed vLLM said about itself before the first trial.
type Preflight struct {
	// Version is the version line of `--version` ("0.33.0"), for provenance
	// (EngineVersion); "" for a compatible server that answers none.
	Version string
	// Flags are the long flags `serve --help=all` lists, such as "--max-num-seqs" and
	// "--no-enable-prefix-caching", sorted.
	Flags []string
	// Model is the host's own flag model, read from its help (vllm.Version.WithHost): the
	// command line of every trial is built from it (UseHostModel).
	Model *vllm.Version
	// Warnings are what the run should say before the first trial: a version newer than
	// frontier's newest table, a server that answers no version.
	Warnings []string
}

// PreflightConfig is what PreflightWith probes.
type PreflightConfig struct {
	// Command is the engine's command without the model ("vllm serve" when empty).
	Command []string
	Knobs   []Setting
	Args    []string
	// Env is the engine block's environment, which the probes run with as the engine does.
	Env map[string]string
	// Environ is the inherited environment (nil: this process's).
	Environ []string
	// Compatible is a vLLM-compatible server with a command line of its own (model_arg or
	// host_flag set): one without --version is run with a warning instead of refused.
	Compatible bool
	// Planned is the plan's engine.version, for the table when the host answers no version.
	Planned string
	// Timeout bounds each probe (0: DefaultProbeTimeout).
	Timeout time.Duration
}

// ErrPreflight marks a plan the installed engine cannot run: knobs or args it lacks.
var ErrPreflight = errors.New("the installed vLLM does not take the plan's flags")

// PreflightVLLM is PreflightWith for a command, knobs and arguments, with this process's
// environment.
func PreflightVLLM(ctx context.Context, command []string, knobs []Setting, args []string) (Preflight, error) {
	return PreflightWith(ctx, PreflightConfig{Command: command, Knobs: knobs, Args: args})
}

// PreflightWith asks the installed vLLM what it is and which flags it takes, before any GPU
// time is spent. The version is the first line of `PROGRAM --version` that starts with
// MAJOR.MINOR, else of `COMMAND --version` (`frontier sim serve --version`); a --version that
// fails is refused with its command and output. The flags are read from the option lines of
// `COMMAND --help=all` (else `--help`) as argparse lays them out, not from prose, into the
// host's flag model (Preflight.Model), which decides: a knob or argument the host does not
// take is refused with the table's advice ("removed in v0.28 ..."), and so is a knob value
// outside the choices the host lists for its flag. Every probe runs with
// the engine's environment in its own process group, dies with frontier, is bounded in time
// (Timeout) and output (4 MiB), and ends at once when ctx is cancelled. UseHostModel hands
// the model to the engine for the trials' command lines.
func PreflightWith(ctx context.Context, c PreflightConfig) (Preflight, error) {
	command := c.Command
	if len(command) == 0 {
		command = []string{"vllm", "serve"}
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultProbeTimeout
	}
	environ := envList(environOr(c.Environ), c.Env)
	var pf Preflight
	version, warn, err := probeVersion(ctx, command, environ, c.Timeout)
	switch {
	case err != nil && c.Compatible && ctx.Err() == nil && !errors.Is(err, errProbeHung):
		pf.Warnings = append(pf.Warnings, fmt.Sprintf("%s answers no version (%v); it is run with the version unknown", command[0], err))
	case err != nil:
		return pf, err
	}
	pf.Version = version
	if warn != "" {
		pf.Warnings = append(pf.Warnings, warn)
	}
	base := vllmVersion(version, c.Planned)
	if base != nil && base.Warning != "" {
		pf.Warnings = append(pf.Warnings, base.Warning)
	}
	help, err := probe(ctx, append(slices.Clone(command), "--help=all"), environ, c.Timeout)
	if err != nil || !strings.Contains(help, "--") {
		if ctx.Err() != nil || errors.Is(err, errProbeHung) || errors.Is(err, errProbeTooLong) {
			return pf, err
		}
		// Lines before --help=all (and plain argparse) take --help.
		help, err = probe(ctx, append(slices.Clone(command), "--help"), environ, c.Timeout)
		if err != nil {
			return pf, err
		}
	}
	shown := version
	if shown == "" {
		shown = command[0]
	}
	host, err := base.WithHost(shown, help)
	if err != nil {
		return pf, fmt.Errorf("preflight: %s: %w; its output: %s", shellQuote(append(slices.Clone(command), "--help=all")), err, sanitizeOutput([]byte(help)))
	}
	pf.Model = host
	for _, f := range host.Flags() {
		pf.Flags = append(pf.Flags, f.Name)
		if f.Kind == vllm.BooleanOptional {
			pf.Flags = append(pf.Flags, "--no-"+strings.TrimPrefix(f.Name, "--"))
		}
	}
	slices.Sort(pf.Flags)
	var problems []string
	check := func(flag, what string) {
		if err := host.Check(flag); err != nil {
			problems = append(problems, fmt.Sprintf("%s: vLLM %s does not list %s (%v)", what, shown, flag, err))
		}
	}
	for _, k := range c.Knobs {
		if k.Name == "sku" {
			continue
		}
		flag := "--" + strings.ReplaceAll(k.Name, "_", "-")
		if host.Check(flag) != nil {
			check(flag, fmt.Sprintf("knob %q", k.Name))
			continue
		}
		if f, ok := host.Flag(flag); ok && f.Choices != nil && f.Kind == vllm.Store {
			if val, err := vllm.FormatValue(k.Value); err == nil && !slices.Contains(f.Choices, val) && !(k.Name == "quantization" && val == "none") {
				problems = append(problems, fmt.Sprintf("knob %q = %s: vLLM %s takes one of %s for %s", k.Name, val, shown, strings.Join(f.Choices, ", "), f.Name))
			}
		}
		if b, ok := k.Value.(bool); ok && !b {
			for _, a := range host.BoolArgs(flag, false) {
				check(a, fmt.Sprintf("knob %q = false", k.Name))
			}
		}
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a, "=")
			check(name, "engine argument "+name)
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		problems = slices.Compact(problems) // a knob given with several values is named once
		return pf, fmt.Errorf("%w (no trial was started):\n  %s", ErrPreflight, strings.Join(problems, "\n  "))
	}
	return pf, nil
}

// UseHostModel makes a vLLM engine build every command line of command (the engine block's,
// empty for `vllm serve`) from model, the installed vLLM's own flag model that the preflight
// read (Preflight.Model), instead of a version table. Other engines ignore it.
func UseHostModel(eng Engine, command []string, model *vllm.Version) {
	e, ok := eng.(*openAIEngine)
	if !ok || model == nil {
		return
	}
	if len(command) == 0 {
		command = []string{"vllm", "serve"}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hostModels[strings.Join(command, "\x00")] = model
}

// hostModel is the flag model UseHostModel gave for command, or nil.
func (e *openAIEngine) hostModel(command []string) *vllm.Version {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hostModels[strings.Join(command, "\x00")]
}

// versionLineRE is the line of --version output that is the version: "0.33.0",
// "v0.13.0+cu128", not "INFO 08-14 ... detected platform cuda".
var versionLineRE = regexp.MustCompile(`^v?\d+\.\d+`)

// versionLine returns the first line of out that starts with MAJOR.MINOR, or "".
func versionLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if versionLineRE.MatchString(line) {
			return line
		}
	}
	return ""
}

// probeVersion finds the version: `PROGRAM --version`, else `COMMAND --version` (for a
// command such as `frontier sim serve`, whose program is not the server). It returns an
// error naming the command and its output when neither answers a version line; warn says
// which of the two answered when the program alone did not.
func probeVersion(ctx context.Context, command, environ []string, timeout time.Duration) (version, warn string, err error) {
	tries := [][]string{{command[0], "--version"}}
	if len(command) > 1 {
		tries = append(tries, append(slices.Clone(command), "--version"))
	}
	var last error
	for _, argv := range tries {
		out, err := probe(ctx, argv, environ, timeout)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, errProbeHung) {
				return "", "", err
			}
			if last == nil {
				last = err // the program's own --version says most
			}
			continue
		}
		if v := versionLine(out); v != "" {
			return v, "", nil
		}
		if last != nil {
			continue
		}
		last = fmt.Errorf("preflight: %s printed no version line (MAJOR.MINOR...); its output: %s", shellQuote(argv), sanitizeOutput([]byte(out)))
	}
	return "", "", last
}

// Errors of a probe, wrapped with its command.
var (
	errProbeHung    = errors.New("gave no answer")
	errProbeTooLong = errors.New("output too long")
)

// probe runs argv as the preflight does and returns its stdout and stderr together: in its
// own process group, with the parent-death signal (frontier killed, even by SIGKILL, takes
// the probe with it), with timeout, and stopped once its output passes probeOutputLimit. A
// probe that fails is an error naming its command, its exit status and its (sanitised)
// output; cancelling ctx ends it at once.
//
// Its output is complete when the program has exited: a child it left behind that still
// holds the output (vLLM's --version may leave two, in sessions of their own) does not turn
// an answer into a failure. Once the program has exited, its group, its descendants that
// left the group and every process still holding its output are killed.
func probe(ctx context.Context, argv, environ []string, timeout time.Duration) (string, error) {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name := shellQuote(argv)
	cmd := exec.CommandContext(pctx, argv[0], argv[1:]...)
	cmd.Env = environ
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return signalGroup(cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	// Our own pipe, not exec's: Wait returns when the program exits, whatever its children
	// still hold open.
	outR, outW, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("preflight: %s: %w", name, err)
	}
	defer outR.Close()
	cmd.Stdout, cmd.Stderr = outW, outW
	// As in StartProcess: the parent-death signal follows the thread that forked.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	outW.Close() // the probe holds it now
	if err != nil {
		return "", fmt.Errorf("preflight: %s: %w", name, err)
	}
	out := &cappedBuffer{limit: probeOutputLimit, full: cancel}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, outR)
	}()
	pid := cmd.Process.Pid
	desc := newDescendants(pid)
	stopTracking := make(chan struct{})
	go desc.track(stopTracking)
	err = cmd.Wait()
	close(stopTracking)
	// Whatever it left behind: its group, its descendants that left the group, and then
	// whoever still holds its output.
	_ = signalGroup(pid, syscall.SIGKILL)
	desc.signal(pid, syscall.SIGKILL)
	select {
	case <-copied:
	case <-time.After(100 * time.Millisecond):
		killHolders(outR)
		select {
		case <-copied:
		case <-time.After(2 * time.Second): // a holder that could not be killed
			outR.Close()
			<-copied
		}
	}
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("preflight: %s: interrupted: %w", name, ctx.Err())
	case out.over:
		return "", fmt.Errorf("preflight: %s: %w: it wrote more than %d MiB and was stopped", name, errProbeTooLong, probeOutputLimit>>20)
	case pctx.Err() != nil:
		return "", fmt.Errorf("preflight: %s %w within %s and was stopped; check that the program answers it without starting a server", name, errProbeHung, timeout)
	case err != nil:
		return "", fmt.Errorf("preflight: %s failed (%v); its output: %s", name, err, sanitizeOutput(out.Bytes()))
	}
	return out.String(), nil
}

// cappedBuffer keeps up to limit bytes; past it, it calls full (which stops the probe).
type cappedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
	over  bool
	full  func()
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - c.buf.Len(); len(p) > room {
		c.buf.Write(p[:max(room, 0)])
		if !c.over {
			c.over = true
			c.full()
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *cappedBuffer) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.buf.Bytes())
}

func (c *cappedBuffer) String() string { return string(c.Bytes()) }

// sanitizeOutput renders a probe's output for an error: "(no output)"; "(N bytes of binary
// output)" when it is not text; else its last probeShownBytes, control characters escaped
// (so no terminal sequence reaches the screen), on indented lines.
func sanitizeOutput(b []byte) string {
	if len(bytes.TrimSpace(b)) == 0 {
		return "(no output)"
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return fmt.Sprintf("(%d bytes of binary output, not shown)", len(b))
	}
	s := string(b)
	cut := ""
	if len(s) > probeShownBytes {
		s = s[len(s)-probeShownBytes:]
		for !utf8.ValidString(s) {
			s = s[1:]
		}
		cut = "...\n"
	}
	var out strings.Builder
	for _, r := range cut + strings.TrimRight(s, "\n") {
		switch {
		case r == '\n':
			out.WriteString("\n    ")
		case r == '\t':
			out.WriteRune(r)
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&out, "\\x%02x", r)
		default:
			out.WriteRune(r)
		}
	}
	return "\n    " + out.String()
}

func environOr(environ []string) []string {
	if environ != nil {
		return environ
	}
	return os.Environ()
}
