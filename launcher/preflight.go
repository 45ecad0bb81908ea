package launcher

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Preflight is what the installed vLLM said about itself before the first trial.
type Preflight struct {
	// Version is the first line of `vllm --version`, for provenance (EngineVersion).
	Version string
	// Flags are the long flags `serve --help=all` lists, such as "--max-num-seqs" and
	// "--no-enable-prefix-caching", sorted.
	Flags []string
}

// ErrPreflight marks a plan the installed engine cannot run: knobs or args it lacks.
var ErrPreflight = errors.New("the installed vLLM does not take the plan's flags")

// helpFlagRE finds the long flags of an argparse help text.
var helpFlagRE = regexp.MustCompile(`(?:^|[\s,\[(])(--[a-z0-9][a-z0-9._-]*)`)

// PreflightVLLM asks the installed vLLM what it is and which flags it takes, before any GPU
// time is spent: `PROGRAM --version`, then the command (such as `vllm serve`) with
// --help=all. It returns an error wrapping ErrPreflight that names every knob (by its name)
// and every argument the help does not list, with the advice of the version table where it
// knows the flag ("was removed in v0.17; did you mean --enable-log-requests?"). A knob is
// checked as --x-y; a boolean knob whose false value needs --no-x-y is checked in that form
// too. command is the engine's command without the model, as in the plan.
func PreflightVLLM(ctx context.Context, command []string, knobs []Setting, args []string) (Preflight, error) {
	if len(command) == 0 {
		command = []string{"vllm", "serve"}
	}
	var pf Preflight
	out, err := runQuiet(ctx, append([]string{command[0]}, "--version"))
	if err != nil {
		return pf, fmt.Errorf("preflight: %s --version: %w", command[0], err)
	}
	pf.Version = firstLineOf(out)
	help, err := runQuiet(ctx, append(slices.Clone(command), "--help=all"))
	if err != nil || !strings.Contains(help, "--") {
		// Lines before --help=all (and plain argparse) take --help.
		help, err = runQuiet(ctx, append(slices.Clone(command), "--help"))
		if err != nil {
			return pf, fmt.Errorf("preflight: %s --help: %w", strings.Join(command, " "), err)
		}
	}
	seen := map[string]bool{}
	for _, m := range helpFlagRE.FindAllStringSubmatch(help, -1) {
		seen[strings.TrimRight(m[1], ".,")] = true
	}
	for f := range seen {
		pf.Flags = append(pf.Flags, f)
	}
	slices.Sort(pf.Flags)
	ver := vllmVersion(pf.Version, "")
	var problems []string
	check := func(flag, what string) {
		if seen[flag] {
			return
		}
		msg := fmt.Sprintf("%s: vLLM %s does not list %s", what, pf.Version, flag)
		if ver != nil {
			if err := ver.Check(flag); err != nil {
				msg += " (" + err.Error() + ")"
			}
		}
		problems = append(problems, msg)
	}
	for _, k := range knobs {
		if k.Name == "sku" {
			continue
		}
		flag := "--" + strings.ReplaceAll(k.Name, "_", "-")
		check(flag, fmt.Sprintf("knob %q", k.Name))
		if b, ok := k.Value.(bool); ok && !b && ver != nil {
			for _, a := range ver.BoolArgs(flag, false) {
				check(a, fmt.Sprintf("knob %q = false", k.Name))
			}
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a, "=")
			check(name, "engine argument "+name)
		}
	}
	if len(problems) > 0 {
		return pf, fmt.Errorf("%w (no trial was started):\n  %s", ErrPreflight, strings.Join(problems, "\n  "))
	}
	return pf, nil
}

// runQuiet runs argv in its own process group with a time limit and returns its stdout and
// stderr together.
func runQuiet(ctx context.Context, argv []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return signalGroup(cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}
