package workload

import (
	"syscall"
	"time"
)

// sleepPrecise sleeps for d, a short wait, with the kernel's timer resolution. The Go
// runtime's timers wake an idle process on a millisecond grid on Linux (epoll's timeout);
// a nanosleep system call is finer, and only blocks the calling thread.
func sleepPrecise(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var left syscall.Timespec
		err := syscall.Nanosleep(&ts, &left)
		if err != syscall.EINTR {
			return
		}
		ts = left
	}
}
