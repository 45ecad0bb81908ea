package launcher

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// descendantPoll is how often a running engine's descendants are looked up in /proc.
const descendantPoll = 500 * time.Millisecond

// procID names a process across pid reuse: its pid and its start time in clock ticks since
// boot (field 22 of /proc/PID/stat).
type procID struct {
	pid   int
	start uint64
}

// descendants tracks every process an engine started, by a walk of /proc by parent pid, so
// that those that left its process group (setsid, a daemon's double fork) are ended with it.
// A process seen once stays tracked after its parent exits and it is handed to init; one
// that forks and leaves within a poll interval of its birth can escape.
type descendants struct {
	root int
	mu   sync.Mutex
	seen map[int]procID
}

func newDescendants(root int) *descendants {
	return &descendants{root: root, seen: map[int]procID{}}
}

// track looks the descendants up every descendantPoll until stop is closed.
func (d *descendants) track(stop <-chan struct{}) {
	t := time.NewTicker(descendantPoll)
	defer t.Stop()
	for {
		d.sweep()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// sweep adds the root's descendants, and those of every tracked process, to the tracked set.
func (d *descendants) sweep() {
	procs := readProcs()
	d.mu.Lock()
	defer d.mu.Unlock()
	// Tracked processes still alive with the same start time are roots too.
	alive := map[int]bool{d.root: true}
	for pid, id := range d.seen {
		if p, ok := procs[pid]; ok && p.start == id.start {
			alive[pid] = true
		} else {
			delete(d.seen, pid)
		}
	}
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	queue := make([]int, 0, len(alive))
	for pid := range alive {
		queue = append(queue, pid)
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if _, ok := d.seen[c]; ok || c == d.root {
				continue
			}
			d.seen[c] = procID{c, procs[c].start}
			queue = append(queue, c)
		}
	}
}

// signal sends sig to every tracked process outside the process group pgid (the group is
// signalled as a whole) that is still the process that was seen.
func (d *descendants) signal(pgid int, sig syscall.Signal) {
	d.sweep()
	procs := readProcs()
	d.mu.Lock()
	defer d.mu.Unlock()
	for pid, id := range d.seen {
		p, ok := procs[pid]
		if !ok || p.start != id.start || p.pgrp == pgid && sig == syscall.SIGTERM {
			continue
		}
		_ = syscall.Kill(pid, sig)
	}
}

// procInfo is what a walk of /proc needs of one process.
type procInfo struct {
	ppid, pgrp int
	start      uint64
}

// readProcs reads the parent, group and start time of every live process from /proc.
// Zombies are left out: they hold nothing and cannot be signalled.
func readProcs() map[int]procInfo {
	out := map[int]procInfo{}
	f, err := os.Open("/proc")
	if err != nil {
		return out
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		rest := bytes.Fields(stat[i+1:])
		if len(rest) < 20 || rest[0][0] == 'Z' || rest[0][0] == 'X' {
			continue
		}
		ppid, _ := strconv.Atoi(string(rest[1]))
		pgrp, _ := strconv.Atoi(string(rest[2]))
		start, _ := strconv.ParseUint(string(rest[19]), 10, 64)
		out[pid] = procInfo{ppid: ppid, pgrp: pgrp, start: start}
	}
	return out
}

// killHolders sends SIGKILL to every other process that holds the pipe whose read end is r
// open: what a finished program's children left holding its output. Only processes whose
// open files this one may read (the same user's) are found.
func killHolders(r *os.File) {
	st, err := r.Stat()
	if err != nil {
		return
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	for _, pid := range pipeHolders(sys.Ino) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// pipeHolders are the processes other than this one with a file descriptor on the pipe of
// inode ino, found in /proc/PID/fd.
func pipeHolders(ino uint64) []int {
	target := "pipe:[" + strconv.FormatUint(ino, 10) + "]"
	names, err := readDirNames("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		fds, err := readDirNames("/proc/" + name + "/fd")
		if err != nil {
			continue // gone, or another user's
		}
		for _, fd := range fds {
			if link, err := os.Readlink("/proc/" + name + "/fd/" + fd); err == nil && link == target {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// readDirNames lists a folder's names, unsorted.
func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
