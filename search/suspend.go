package search

import (
	"errors"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/frontier-llm/frontier/launcher"
)

// resumes counts the SIGCONTs frontier received: each ends a time the process was stopped
// (SIGTSTP from Ctrl-Z, or SIGSTOP). The engine runs in its own process group and goes on
// serving meanwhile, but the workload's clocks keep running while it cannot read the
// answers: a measurement that spans a stop holds the pause as engine latency.
var resumes atomic.Int64

var watchResumes = sync.OnceFunc(func() {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGCONT)
	go func() {
		for range ch {
			resumes.Add(1)
		}
	}()
})

// suspendedReason is the reason of a trial whose measurement spanned a stop of frontier.
const suspendedReason = "frontier was stopped (SIGTSTP or SIGSTOP) during the measurement, which would count the pause as engine latency; it is measured again"

// isHostIO reports whether err is a failure of frontier's own input or output (an engine
// log or a work folder that cannot be written): not a measurement of the configuration.
func isHostIO(err error) bool {
	var he *launcher.HostIOError
	return errors.As(err, &he)
}

// hostIOReason is the reason of a trial put back after frontier's own I/O failed.
func hostIOReason(err error) string {
	return "frontier could not write its own files (" + err.Error() + "); the next apply measures it again"
}
