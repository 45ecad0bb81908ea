package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/frontier-llm/frontier/inputfile"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// ErrBadStorage is wrapped by the errors of a storage argument that cannot name a study
// database: blank, a special file such as /dev/stdout, a file that is not SQLite.
var ErrBadStorage = errors.New("not a usable study database")

// ErrForeignDatabase is wrapped by the error of a database that holds another program's
// tables (an Optuna study, anything else): frontier leaves it as it is.
var ErrForeignDatabase = errors.New("the database is not a frontier study database")

// goptunaTables are the tables of goptuna's RDB schema, which frontier's studies use.
var goptunaTables = map[string]bool{
	"studies": true, "study_user_attributes": true, "study_system_attributes": true,
	"trials": true, "trial_user_attributes": true, "trial_system_attributes": true,
	"trial_params": true, "trial_values": true,
}

// optunaTables are tables Optuna's schema has and goptuna's has not.
var optunaTables = []string{"alembic_version", "version_info", "study_directions", "trial_heartbeats", "trial_intermediate_values"}

// checkSQLitePath refuses a SQLite path that cannot be a study database before SQLite opens
// (and maybe creates) it: blank or padded with spaces, something that is not a regular file
// (a device such as /dev/stdout, a pipe, a folder), or a file that is not SQLite.
func checkSQLitePath(raw, path string) error {
	if strings.TrimSpace(path) == "" {
		return fmt.Errorf("storage %q: the SQLite path is blank: %w; give a file name such as study.db", raw, ErrBadStorage)
	}
	if strings.TrimSpace(path) != path {
		return fmt.Errorf("storage %q: the SQLite path starts or ends with white space, which is most likely a quoting mistake: %w", raw, ErrBadStorage)
	}
	f, _, err := inputfile.Open(path, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil // a new study database
	case errors.Is(err, inputfile.ErrNotRegular):
		return fmt.Errorf("storage %q: %v; a study database is a SQLite file: %w", raw, err, ErrBadStorage)
	case err != nil:
		return nil // SQLite says what is wrong (permissions) in its own words
	}
	defer f.Close()
	head := make([]byte, 16)
	n, err := io.ReadFull(f, head)
	if n == 0 && (err == io.EOF || err == nil) {
		return nil // an empty file: SQLite makes it a database
	}
	if !bytes.Equal(head[:n], []byte("SQLite format 3\x00")) {
		return fmt.Errorf("storage %q: %s is not a SQLite database (its first bytes are not SQLite's header), so it is no study database; it was left unchanged: %w", raw, path, ErrBadStorage)
	}
	return nil
}

// checkForeign refuses a database that holds another program's schema before frontier
// creates or reads its tables in it. In a SQLite file every table must be goptuna's; a
// server database may hold other programs' tables beside them, but a "studies" table must be
// goptuna's (Optuna's has no direction column).
func (s *Store) checkForeign() error {
	tables, err := s.DB.Migrator().GetTables()
	if err != nil {
		return fmt.Errorf("list the tables of %s: %w", s.Display, err)
	}
	var foreign []string
	has := map[string]bool{}
	for _, t := range tables {
		has[t] = true
		if !goptunaTables[t] && !strings.HasPrefix(t, "sqlite_") {
			foreign = append(foreign, t)
		}
	}
	sort.Strings(foreign)
	var optuna []string
	for _, t := range optunaTables {
		if has[t] {
			optuna = append(optuna, t)
		}
	}
	studiesForeign := has["studies"] && !s.DB.Migrator().HasColumn("studies", "direction")
	switch {
	case len(optuna) > 0 || (studiesForeign && has["trials"]):
		what := "tables " + strings.Join(optuna, ", ")
		if len(optuna) == 0 {
			what = "a studies table without goptuna's direction column"
		}
		return fmt.Errorf("%s is an Optuna study database (it has %s): frontier keeps its studies in goptuna's schema, which Optuna's differs from, so it was left unchanged; give --storage a new database: %w", s.Display, what, ErrForeignDatabase)
	case studiesForeign:
		return fmt.Errorf("%s has a studies table of another program (without goptuna's direction column), so it was left unchanged; give --storage a new database: %w", s.Display, ErrForeignDatabase)
	case s.dialect == "sqlite" && len(foreign) > 0:
		if len(foreign) > 8 {
			foreign = append(foreign[:8], fmt.Sprintf("and %d more", len(foreign)-8))
		}
		return fmt.Errorf("%s is another program's database (it has the tables %s, which are not goptuna's), so it was left unchanged; give --storage a new file: %w", s.Display, strings.Join(foreign, ", "), ErrForeignDatabase)
	}
	return nil
}

// checkForeignFile runs checkForeign on the SQLite file at path opened read-only, without
// waiting on a lock: a locked file is left to the caller, which waits for it as it always
// does. Only ErrForeignDatabase is returned.
func checkForeignFile(path, display string) error {
	db, err := gorm.Open(sqlite.Open("file:"+path+"?mode=ro&_busy_timeout=100"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return nil
	}
	pre := &Store{DB: db, dialect: "sqlite", path: path, Display: display}
	defer pre.Close()
	if err := pre.checkForeign(); errors.Is(err, ErrForeignDatabase) {
		return err
	}
	return nil
}

// redactedError is an error whose text had a password removed; it unwraps to the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr removes the password of the storage URL raw from err's text.
func redactErr(raw string, err error) error {
	pw := urlPassword(raw)
	if err == nil || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), pw, "xxxxx"), err: err}
}

// urlPassword finds the password of a URL of the form scheme://user:password@host...,
// whether or not the rest of it parses.
func urlPassword(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		// A password may hold '/', '?' or '#'; the user information ends at the last '@'
		// before the host, so look for '@' in the whole rest when there is one.
		if at := strings.LastIndex(rest, "@"); at > i {
			rest = rest[:at]
		} else {
			rest = rest[:i]
		}
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return ""
	}
	_, pw, ok := strings.Cut(rest[:at], ":")
	if !ok {
		return ""
	}
	return pw
}
