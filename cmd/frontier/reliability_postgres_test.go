package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// pgCutProxy is a TCP proxy on loopback between frontier and a real PostgreSQL server; cut
// drops its connections and refuses new ones, as a server that went away, until restore.
type pgCutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func (p *pgCutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close(); c.Close() }()
		go func() { _, _ = io.Copy(c, up); up.Close(); c.Close() }()
	}
}

func (p *pgCutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// postgresStudyURL creates an empty database on the server of FRONTIER_TEST_POSTGRES (see
// scripts/postgres.sh) and returns its URL through a new proxy; it skips without a server.
func postgresStudyURL(t *testing.T) (string, *pgCutProxy) {
	t.Helper()
	server := os.Getenv("FRONTIER_TEST_POSTGRES")
	if server == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("FRONTIER_TEST_POSTGRES is not set: run eval \"$(scripts/postgres.sh start)\" first")
		}
		t.Skip("FRONTIER_TEST_POSTGRES is not set; scripts/postgres.sh starts a server")
	}
	db, err := gorm.Open(postgres.Open(server), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	name := fmt.Sprintf("frontier_rel_%d", time.Now().UnixNano())
	if err := db.Exec("CREATE DATABASE " + name).Error; err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgCutProxy{ln: ln, target: u.Host}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go p.serve()
	u.Host, u.Path = ln.Addr().String(), "/"+name
	return u.String(), p
}

// postgresOutageCase cuts the connection to the PostgreSQL study for 4 s from the start of
// trial 0 (a trial of the simulated vLLM takes well under that): the trial's record waits
// for the server, and the run goes on.
func postgresOutageCase(t *testing.T, dir, mk string) relRow {
	dbURL, proxy := postgresStudyURL(t)
	writePlan(t, dir, relPlan{Model: mk, Trials: 2, Requests: 6})
	r := startFrontier(t, dir, nil, "apply", "plan.hcl", "--storage", dbURL)
	r.await(t, `trial 0 started`, time.Minute)
	proxy.setCut(true)
	time.Sleep(4 * time.Second)
	proxy.setCut(false)
	res := r.wait(t, 3*time.Minute)
	const done = "study reliability (simulated): 2 of 2 trials"
	row := relRow{Exit: res.code, Saw: saw(res.stdout+res.stderr, done), Left: left(mk, res.pid)}
	row.Stored = storedSummary(study(t, dbURL))
	return row
}
