package storage

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"gorm.io/gorm"
)

// DefaultRetryFor bounds how long a write to a PostgreSQL or MySQL study waits for a server
// it lost (a restart, a failover, a network cut) before the run stops: an unattended study
// outlasts a brief outage, and a measurement finished meanwhile is stored, not thrown away.
const DefaultRetryFor = 2 * time.Minute

// retryBackoff is the first wait between attempts; it doubles up to retryBackoffMax.
const (
	retryBackoff    = 250 * time.Millisecond
	retryBackoffMax = 5 * time.Second
)

// transaction runs f in a transaction. On a server database, a transaction that failed
// because the connection was lost is run again, with a growing wait between attempts, for
// up to RetryFor (DefaultRetryFor when zero); f is told whether an earlier attempt may have
// committed without the answer reaching frontier. Once the run is interrupted (the context
// Open was given is done) nothing is tried again. SQLite files are not retried here: their
// locks are waited for by the busy timeout, and their other errors do not pass with time.
func (s *Store) transaction(f func(tx *gorm.DB, retry bool) error) error {
	retry := false
	err := s.DB.Transaction(func(tx *gorm.DB) error { return f(tx, retry) })
	if err == nil || s.dialect == "sqlite" || !transient(err) {
		return err
	}
	bound := s.RetryFor
	if bound <= 0 {
		bound = DefaultRetryFor
	}
	deadline := time.Now().Add(bound)
	wait := retryBackoff
	ctx := s.interrupt
	if ctx == nil {
		ctx = context.Background()
	}
	for transient(err) {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(min(wait, left)):
		}
		wait = min(2*wait, retryBackoffMax)
		retry = true
		if err = s.DB.Transaction(func(tx *gorm.DB) error { return f(tx, retry) }); err == nil {
			return nil
		}
	}
	if transient(err) {
		return &unreachableError{bound: bound, err: err}
	}
	return err
}

// unreachableError is a lost connection that did not come back within the bound.
type unreachableError struct {
	bound time.Duration
	err   error
}

func (e *unreachableError) Error() string {
	return "the database server stayed unreachable for " + e.bound.String() + ": " + e.err.Error()
}

func (e *unreachableError) Unwrap() error { return e.err }

// transient reports whether err is a lost or refused connection to a database server, or
// the server's own word that it is going away or cannot take connections yet: an error that
// time may cure, unlike a constraint or a syntax error.
func transient(err error) bool {
	if err == nil {
		return false
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		c := coded.SQLState()
		// 08: connection exception; 57P01-57P03: admin or crash shutdown, cannot connect now;
		// 40001, 40P01: a serialization failure or deadlock, which succeed when tried again.
		return strings.HasPrefix(c, "08") || c == "57P01" || c == "57P02" || c == "57P03" || c == "40001" || c == "40P01"
	}
	var safe interface{ SafeToRetry() bool }
	if errors.As(err, &safe) && safe.SafeToRetry() {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	msg := err.Error()
	// pgx's own words for a connection it already knows to be gone.
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "failed to connect to") || strings.Contains(msg, "connection reset by peer")
}
