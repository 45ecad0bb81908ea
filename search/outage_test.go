package search

import (
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search/storage"
)

// cutProxy is a TCP proxy on loopback between frontier and a PostgreSQL server that can be
// cut (every connection dropped, new ones closed at once, as a server that went away) and
// restored: a brief outage of the database, with a real server on both sides of it.
type cutProxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	cut     bool
	conns   map[net.Conn]bool
	dropped int
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go p.serve()
	return p
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.dropped++
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close(); c.Close() }()
		go func() { _, _ = io.Copy(c, up); up.Close(); c.Close() }()
	}
}

// setCut drops every open connection and refuses new ones (true), or lets them through.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
			p.dropped++
		}
		p.conns = map[net.Conn]bool{}
	}
}

func (p *cutProxy) droppedConns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// proxied is dbURL with its host replaced by the proxy's address, and the proxy.
func proxied(t *testing.T, dbURL string) (string, *cutProxy) {
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	p := newCutProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	return u.String(), p
}

// outageEval cuts the database as trial cutAt is measured and restores it after restoreAfter:
// the measurement finishes while the server is away.
type outageEval struct {
	inner        evaluator
	proxy        *cutProxy
	cutAt        int
	restoreAfter time.Duration
}

func (e *outageEval) evaluate(ctx context.Context, j job) (*outcome, error) {
	if j.number == e.cutAt {
		e.proxy.setCut(true)
		time.AfterFunc(e.restoreAfter, func() { e.proxy.setCut(false) })
	}
	return e.inner.evaluate(ctx, j)
}

func (e *outageEval) close() {}

// A PostgreSQL outage of a few seconds while a trial is measured: the trial's record waits
// for the server and is stored, and the study reaches its budget, instead of ending the run
// and throwing the measurement away.
func TestABriefPostgreSQLOutageKeepsTheMeasurement(t *testing.T) {
	t.Parallel()
	dbURL, proxy := proxied(t, freshDatabase(t, postgresURL(t)))
	p := loadPlan(t, "estimate.hcl", "confirm=0", "trials=4")
	inner, err := newStudyEstimator(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := &outageEval{inner: inner, proxy: proxy, cutAt: 1, restoreAfter: 2 * time.Second}
	start := time.Now()
	sum, err := Run(context.Background(), p, Options{Storage: dbURL, Trials: 4, eval: ev})
	if err != nil {
		t.Fatalf("the run ended on the outage: %v", err)
	}
	if proxy.droppedConns() == 0 || time.Since(start) < 2*time.Second {
		t.Fatalf("the outage did not happen (%d connections dropped, %s): the test no longer checks what it means to", proxy.droppedConns(), time.Since(start))
	}
	if sum.Measured != 4 {
		t.Errorf("measured %d trials, want 4", sum.Measured)
	}
	var states []string
	for _, tr := range sum.Record.Trials {
		states = append(states, string(tr.State))
		if tr.State == record.StateRunning || tr.State == record.StateWaiting || tr.State == record.StateInterrupted || tr.State == record.StateFailed {
			t.Errorf("trial %d is %s: %s", tr.Number, tr.State, tr.Reason)
		}
	}
	if len(sum.Record.Trials) != 4 {
		t.Errorf("%d trials stored (%v), want 4", len(sum.Record.Trials), states)
	}
}

// An outage longer than the bound ends the wait with an error that says so.
func TestAPostgreSQLOutagePastTheBoundIsAnError(t *testing.T) {
	t.Parallel()
	dbURL, proxy := proxied(t, freshDatabase(t, postgresURL(t)))
	st, err := storage.Open(context.Background(), dbURL, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id, err := st.EnsureStudy(context.Background(), "outage", storage.StudyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	st.RetryFor = 1500 * time.Millisecond
	proxy.setCut(true)
	start := time.Now()
	_, err = st.ClaimWaiting(id, "owner")
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "stayed unreachable for 1.5s") {
		t.Errorf("ClaimWaiting during an endless outage = %v, want the bound in the error", err)
	}
	if took < time.Second || took > 10*time.Second {
		t.Errorf("ClaimWaiting gave up after %s, want about the bound of 1.5s", took)
	}
}
