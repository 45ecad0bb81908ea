package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/frontier-llm/frontier/redact"
)

// DefaultGracePeriod is how long Stop waits after SIGTERM before it sends SIGKILL, when
// Options.GracePeriod and ProcessConfig.GracePeriod are zero.
const DefaultGracePeriod = 10 * time.Second

// ProcessConfig describes one engine process to supervise.
type ProcessConfig struct {
	// Argv is the program and its arguments. It is executed directly, never through a shell.
	Argv []string
	// Env is the complete environment of the process ("KEY=value").
	Env []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// LogPath is the file that receives the process's stdout and stderr. It is created
	// (truncated) by StartProcess. Empty means a new file in the system's temporary folder.
	LogPath string
	// LogHeader is written at the top of the log file before the process starts, e.g. the
	// command with its secrets redacted. It must not contain secrets.
	LogHeader string
	// GracePeriod is how long Stop waits after SIGTERM before SIGKILL; 0 means
	// DefaultGracePeriod.
	GracePeriod time.Duration
	// Redact lists secret values (tokens, keys) that must not reach the log: engines echo
	// their flags at startup (vLLM's "non-default args"), so each occurrence in the process's
	// output is replaced by redact.Placeholder as it is written. See redact.Values.
	Redact []string
	// MaxLogBytes bounds the log file; 0 means DefaultMaxLogBytes. See logWriter.
	MaxLogBytes int64
}

// Process is a child process that runs in its own process group, so that it and everything it
// spawns can be signalled at once. Its stdout and stderr go through a pipe to a log file of
// bounded size (ProcessConfig.MaxLogBytes); a failure to write it is kept (LogError) and
// never blocks the process.
//
// When the leader exits, for whatever reason, every process left in its group is killed with
// SIGKILL, so an engine's worker processes never outlive it. Its descendants that leave the
// group (a setsid() call, a daemon's double fork) are found by a walk of /proc by parent pid
// while it runs, and are signalled with the group. When frontier itself dies
// without stopping it, the kernel kills the leader (PR_SET_PDEATHSIG with SIGKILL).
type Process struct {
	cmd     *exec.Cmd
	cancel  context.CancelFunc // sends SIGTERM to the group through cmd.Cancel
	logPath string
	logFile *os.File
	logFrom int64 // where the process's own output starts, after the header
	// copied is closed when the copy of the output has reached the log.
	copied chan struct{}
	outR   *os.File // the read end of the output pipe
	logW   *logWriter
	pgid   int
	// desc tracks the processes the engine started, also those that left its group.
	desc *descendants

	exited  chan struct{}
	waitErr error // set before exited is closed

	stopOnce sync.Once
	stopping chan struct{} // closed when Stop was called
}

// ErrEmptyCommand is returned by StartProcess for a config without a program.
var ErrEmptyCommand = errors.New("launcher: empty command")

// StartProcess starts cfg.Argv in a new process group with its output going to cfg.LogPath.
// ctx only bounds the start itself: the process lives until it exits or Stop is called, even
// after ctx is done. On error nothing is left running.
func StartProcess(ctx context.Context, cfg ProcessConfig) (*Process, error) {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return nil, ErrEmptyCommand
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Argv[0], err)
	}
	logFile, err := openLog(cfg.LogPath)
	if err != nil {
		return nil, err
	}
	if cfg.LogHeader != "" {
		if _, err := io.WriteString(logFile, cfg.LogHeader); err != nil {
			logFile.Close()
			return nil, &HostIOError{Op: "write engine log header", Path: logFile.Name(), Err: err}
		}
	}
	grace := cfg.GracePeriod
	if grace <= 0 {
		grace = DefaultGracePeriod
	}

	// The process's lifetime is its own: it is cancelled by Stop, not by the caller's ctx.
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cmd := exec.CommandContext(life, cfg.Argv[0], cfg.Argv[1:]...)
	cmd.Env = cfg.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Dir = cfg.Dir
	cmd.Stdin = nil // /dev/null
	// Our own pipe, not exec's: Wait then returns when the leader exits, whatever its
	// children still hold open, and the group is killed at once.
	outR, outW, err := os.Pipe()
	if err != nil {
		cancel()
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", cfg.Argv[0], err)
	}
	cmd.Stdout, cmd.Stderr = outW, outW
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// Should frontier itself die without stopping its engines (SIGKILL, a crash), the
		// kernel kills the leader. SIGKILL, not SIGTERM: nobody is left to escalate after a
		// grace period, and an engine that ignores or stalls on SIGTERM would keep its GPUs.
		Pdeathsig: syscall.SIGKILL,
	}
	// Cancel signals the whole group, not only the leader, and the engine's descendants that
	// left it; WaitDelay is the grace period after which exec kills the leader, and the group
	// and the descendants are killed after Wait (see wait).
	var desc *descendants
	cmd.Cancel = func() error {
		err := signalGroup(cmd.Process.Pid, syscall.SIGTERM)
		desc.signal(cmd.Process.Pid, syscall.SIGTERM)
		return err
	}
	cmd.WaitDelay = grace

	// The kernel sends Pdeathsig when the thread that forked the child exits, not the
	// process: the goroutine stays on one OS thread from fork to return, so that the Go
	// runtime cannot retire that thread in between. A thread the runtime retires later is
	// one a goroutine locked and left locked, which frontier does not do.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		cancel()
		logFile.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("start %s: %w", cfg.Argv[0], err)
	}
	desc = newDescendants(cmd.Process.Pid)
	p := &Process{
		cmd:      cmd,
		cancel:   cancel,
		logPath:  logFile.Name(),
		logFile:  logFile,
		logFrom:  int64(len(cfg.LogHeader)),
		pgid:     cmd.Process.Pid,
		desc:     desc,
		exited:   make(chan struct{}),
		stopping: make(chan struct{}),
	}
	outW.Close() // the children hold it now
	p.outR, p.copied = outR, make(chan struct{})
	p.logW = newLogWriter(logFile, int64(len(cfg.LogHeader)), cfg.MaxLogBytes)
	go func() {
		defer close(p.copied)
		if len(cfg.Redact) == 0 {
			_, _ = io.Copy(p.logW, outR)
			return
		}
		w := redact.NewWriter(p.logW, cfg.Redact)
		_, _ = io.Copy(w, outR)
		_ = w.Flush()
	}()
	stopTracking := make(chan struct{})
	go desc.track(stopTracking)
	go p.wait(stopTracking)
	return p, nil
}

func openLog(path string) (*os.File, error) {
	if path == "" {
		f, err := os.CreateTemp("", "frontier-engine-*.log")
		if err != nil {
			return nil, &HostIOError{Op: "create engine log in", Path: os.TempDir(), Err: err}
		}
		return f, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, &HostIOError{Op: "create engine log folder", Path: filepath.Dir(path), Err: err}
	}
	// Read and write: the size bound reads the recent output back when it cuts the log.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return nil, &HostIOError{Op: "create engine log", Path: path, Err: err}
	}
	return f, nil
}

// wait reaps the leader, kills whatever is left of its group and of its descendants, and
// closes exited.
func (p *Process) wait(stopTracking chan struct{}) {
	err := p.cmd.Wait()
	// Children of the leader (vLLM's engine core and workers) may still run: kill the group,
	// and whatever the engine started that left the group (setsid).
	_ = signalGroup(p.pgid, syscall.SIGKILL)
	close(stopTracking)
	p.desc.signal(p.pgid, syscall.SIGKILL)
	p.cancel()
	// The group is gone, so the pipe ends; a process that left the group may still hold
	// it: stop copying after a moment.
	select {
	case <-p.copied:
	case <-time.After(2 * time.Second):
		p.outR.Close()
		<-p.copied
	}
	p.outR.Close()
	p.logFile.Close()
	p.waitErr = err
	close(p.exited)
}

// signalGroup sends sig to every process of the group pgid. A group that no longer exists is
// not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 0 {
		return nil
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// Pid is the process id of the leader, which is also the process group id.
func (p *Process) Pid() int { return p.pgid }

// LogPath is the file that receives the process's output.
func (p *Process) LogPath() string { return p.logPath }

// LogError is the first failure to write the process's output to its log (a full or
// read-only disk), a *HostIOError, or nil. The process is not affected by it: its output
// is discarded from then on.
func (p *Process) LogError() error { return p.logW.Err() }

// Exited is closed once the leader has exited and its group has been killed.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Stopped reports whether Stop has been called.
func (p *Process) Stopped() bool {
	select {
	case <-p.stopping:
		return true
	default:
		return false
	}
}

// ExitErr is the leader's exit status as exec.Cmd.Wait reports it (nil for exit status 0).
// It is only meaningful after Exited is closed.
func (p *Process) ExitErr() error {
	select {
	case <-p.exited:
		return p.waitErr
	default:
		return nil
	}
}

// ExitCode is the leader's exit code, -1 when it was killed by a signal or has not exited.
func (p *Process) ExitCode() int {
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// ExitStatus says how the leader ended, as "status 1" or "signal KILL"; "" while it runs.
func (p *Process) ExitStatus() string {
	select {
	case <-p.exited:
	default:
		return ""
	}
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return "signal " + signalName(ws.Signal())
	}
	return fmt.Sprintf("status %d", p.cmd.ProcessState.ExitCode())
}

// signalName is a signal's name without "SIG" ("KILL"), or its number for one not listed.
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "KILL"
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGINT:
		return "INT"
	case syscall.SIGHUP:
		return "HUP"
	case syscall.SIGQUIT:
		return "QUIT"
	case syscall.SIGSEGV:
		return "SEGV"
	case syscall.SIGABRT:
		return "ABRT"
	case syscall.SIGBUS:
		return "BUS"
	case syscall.SIGFPE:
		return "FPE"
	case syscall.SIGILL:
		return "ILL"
	case syscall.SIGPIPE:
		return "PIPE"
	case syscall.SIGUSR1:
		return "USR1"
	case syscall.SIGUSR2:
		return "USR2"
	}
	return fmt.Sprintf("%d", int(sig))
}

// selfInflicted reports whether a signal is one a program raises on itself when it fails
// (a bad access, an abort): its log may say why. Others come from outside (a user, the
// kernel's out-of-memory killer), and the log knows nothing of them.
func selfInflicted(sig string) bool {
	switch sig {
	case "signal SEGV", "signal ABRT", "signal BUS", "signal FPE", "signal ILL":
		return true
	}
	return false
}

// Stop terminates the process group: SIGTERM to the group, then SIGKILL to the group after
// the grace period, and waits until the leader has been reaped. If ctx ends first, the group
// is killed at once. Stop is safe to call more than once and from several goroutines; every
// call waits for the exit.
func (p *Process) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() {
		close(p.stopping)
		p.cancel() // cmd.Cancel: SIGTERM to the group; WaitDelay: SIGKILL after the grace
	})
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		_ = signalGroup(p.pgid, syscall.SIGKILL)
		<-p.exited
		return fmt.Errorf("stop %s: killed without grace: %w", p.cmd.Path, ctx.Err())
	}
}

// LogTail returns up to the last max bytes of what the process wrote to its log (not the
// header), starting at a line boundary.
func (p *Process) LogTail(max int) string {
	return readTail(p.logPath, max, p.logFrom)
}

// LogHead returns up to the first max bytes of what the process wrote to its log (not the
// header).
func (p *Process) LogHead(max int) string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, max)
	n, _ := f.ReadAt(buf, p.logFrom)
	return string(buf[:n])
}

// readTail returns up to the last max bytes of the file at path from offset from on,
// starting at a line boundary.
func readTail(path string, max int, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - int64(max)
	if off < from {
		off = from
	}
	if off >= st.Size() {
		return ""
	}
	buf := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(buf, off)
	buf = buf[:n]
	if off > from {
		for i, b := range buf {
			if b == '\n' {
				buf = buf[i+1:]
				break
			}
		}
	}
	return string(buf)
}
