package search

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestStaleOwnersByHostPidAndHeartbeat checks which running trials a worker takes back: on
// its own host, those of a process that is gone and those held under its own pid by an
// earlier process (a container restarted under its host name, frontier its first process
// again); anywhere, those whose heartbeat is older than the lease.
func TestStaleOwnersByHostPidAndHeartbeat(t *testing.T) {
	t.Parallel()
	const lease = 10 * time.Second
	r := &runner{host: "job-0", pid: os.Getpid(), opts: Options{StaleAfter: lease}}
	r.owner = fmt.Sprintf("job-0/%d/200", r.pid)
	fresh, old := time.Now().Add(-time.Second), time.Now().Add(-2*lease)
	parent := os.Getppid() // a live process of this host
	tests := []struct {
		name  string
		owner string
		beat  time.Time
		want  bool
	}{
		{"this process", r.owner, old, false},
		{"an earlier process under this host name and pid", fmt.Sprintf("job-0/%d/100", r.pid), fresh, true},
		{"a live process of this host", fmt.Sprintf("job-0/%d/100", parent), fresh, false},
		{"a live process of this host, silent past the lease", fmt.Sprintf("job-0/%d/100", parent), old, true},
		{"a process of this host that is gone", "job-0/999999999/100", fresh, true},
		{"another host, beating", fmt.Sprintf("job-1/%d/100", r.pid), fresh, false},
		{"another host, silent past the lease", fmt.Sprintf("job-1/%d/100", r.pid), old, true},
		{"another host, never beat", "job-1/7/100", time.Time{}, true},
	}
	for _, tc := range tests {
		if got := r.isStale(tc.owner, tc.beat); got != tc.want {
			t.Errorf("%s (%s): stale %v, want %v", tc.name, tc.owner, got, tc.want)
		}
	}
}
