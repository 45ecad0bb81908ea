package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/frontier-llm/frontier/record"
	"github.com/mattn/go-sqlite3"

	"github.com/c-bata/goptuna"
	rdb "github.com/c-bata/goptuna/rdb.v2"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/frontier-llm/frontier/quality"
)

// Keys frontier keeps in goptuna's attribute tables. Everything else in the database is
// goptuna's own schema, so goptuna's dashboard can read a study.
const (
	attrSpaceHash   = "frontier:space_hash"
	attrPlanHash    = "frontier:plan_hash"
	attrBudget      = "frontier:budget"
	attrMeta        = "frontier:meta"
	AttrWarmStarted = "frontier:warm_started"
	attrOwner       = "frontier:owner"
	attrHeartbeat   = "frontier:heartbeat"
	AttrConfigKey   = "frontier:config_key"
	attrConfig      = "frontier:config"
	attrRecord      = "frontier:record"
	AttrState       = "frontier:state"
	attrConfirming  = "frontier:confirming"
	// AttrWarmStart marks a queued trial with the storage of the study it came from.
	AttrWarmStart = "frontier:warm_start"
	// AttrPreScreened marks a trial the memory model rejected before it was claimed: it
	// costs nothing and does not count against the budget.
	AttrPreScreened = "frontier:prescreened"
)

// goptuna's trial states as stored.
const (
	DBRunning  = "RUNNING"
	DBComplete = "COMPLETE"
	DBPruned   = "PRUNED"
	DBFail     = "FAIL"
	DBWaiting  = "WAITING"
)

// chunkSize is how many characters one attribute value holds: goptuna's schema declares
// values as varchar(2048), which PostgreSQL and MySQL enforce, so long JSON is split.
const chunkSize = 2000

// ErrSpaceChanged is returned when a study's database holds trials of a different search
// space than the plan's: the plan's knobs, rules, workloads, gates, model or engine changed.
var ErrSpaceChanged = errors.New("the plan's search space changed since the study began")

// ErrReadOnly is returned when the study database cannot be written.
var ErrReadOnly = errors.New("the study database cannot be written")

// mirrors of goptuna's rdb.v2 tables, for the writes frontier makes in its own transactions.
type studyRow struct {
	ID        int    `gorm:"column:study_id;primaryKey"`
	Name      string `gorm:"column:study_name"`
	Direction string `gorm:"column:direction"`
}

func (studyRow) TableName() string { return "studies" }

type TrialRow struct {
	ID               int        `gorm:"column:trial_id;primaryKey"`
	Number           int        `gorm:"column:number"`
	StudyID          int        `gorm:"column:study_id"`
	State            string     `gorm:"column:state"`
	Value            float64    `gorm:"column:value"`
	DatetimeStart    *time.Time `gorm:"column:datetime_start"`
	DatetimeComplete *time.Time `gorm:"column:datetime_complete"`
}

func (TrialRow) TableName() string { return "trials" }

type ParamRow struct {
	ID               int     `gorm:"column:param_id;primaryKey"`
	TrialID          int     `gorm:"column:trial_id"`
	Name             string  `gorm:"column:param_name"`
	Value            float64 `gorm:"column:param_value"`
	DistributionJSON string  `gorm:"column:distribution_json"`
}

func (ParamRow) TableName() string { return "trial_params" }

// attrTable names one of goptuna's four attribute tables and its columns.
type attrTable struct {
	table, idCol, ownerCol string
}

var (
	studySystemAttrs = attrTable{"study_system_attributes", "study_system_attribute_id", "study_id"}
	studyUserAttrs   = attrTable{"study_user_attributes", "study_user_attribute_id", "study_id"}
	trialSystemAttrs = attrTable{"trial_system_attributes", "trial_system_attribute_id", "trial_id"}
	trialUserAttrs   = attrTable{"trial_user_attributes", "trial_user_attribute_id", "trial_id"}
)

// Store is a study database: goptuna's RDB schema through gorm.
type Store struct {
	DB      *gorm.DB
	gs      *rdb.Storage
	dialect string // sqlite | postgres | mysql
	// path is the SQLite file, or "" for a server database.
	path string
	// Display is the URL with any password removed.
	Display string
	// Secrets are values that must never be stored (see secretValues).
	Secrets []string
	// RetryFor bounds how long a claim, a heartbeat or a trial's record waits for a
	// database server whose connection was lost; 0 means DefaultRetryFor.
	RetryFor time.Duration
	// interrupt is the context Open was given: once it is done, nothing is tried again.
	interrupt context.Context
}

// scrub replaces every secret value in s.
func (s *Store) scrub(text string) string {
	for _, v := range s.Secrets {
		text = strings.ReplaceAll(text, v, "<redacted>")
	}
	return text
}

// parseStorage resolves a storage URL to a gorm dialector.
func parseStorage(raw string, readOnly bool) (gorm.Dialector, string, string, error) {
	switch {
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		return postgres.Open(raw), "postgres", "", nil
	case strings.HasPrefix(raw, "mysql://"):
		u, err := url.Parse(raw)
		if err != nil {
			return nil, "", "", fmt.Errorf("storage %q: %v: %w", RedactURL(raw), redactErr(raw, err), ErrBadStorage)
		}
		auth := ""
		if u.User != nil {
			auth = u.User.Username()
			if pw, ok := u.User.Password(); ok {
				auth += ":" + pw
			}
			auth += "@"
		}
		q := u.Query()
		q.Set("parseTime", "true")
		dsn := fmt.Sprintf("%stcp(%s)%s?%s", auth, u.Host, u.Path, q.Encode())
		return mysql.Open(dsn), "mysql", "", nil
	case strings.Contains(raw, "://") && !strings.HasPrefix(raw, "sqlite://"):
		return nil, "", "", fmt.Errorf("storage %q: unknown scheme; use sqlite:///path.db, a file path, postgres://... or mysql://...: %w", RedactURL(raw), ErrBadStorage)
	}
	path := strings.TrimPrefix(raw, "sqlite://")
	if path == "" {
		return nil, "", "", fmt.Errorf("storage: empty SQLite path: %w", ErrBadStorage)
	}
	if err := checkSQLitePath(raw, path); err != nil {
		return nil, "", "", err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", "", fmt.Errorf("storage %q: %w", raw, err)
	}
	q := url.Values{}
	q.Set("_busy_timeout", "30000")
	switch {
	case readOnly && isFile(abs+"-journal"):
		// A hot journal, left by a writer that failed mid-transaction, is rolled back on
		// the first read, which a connection opened with mode=ro cannot do: open it to
		// write, and let it only read.
		q.Set("_query_only", "true")
	case readOnly:
		q.Set("mode", "ro")
	default:
		q.Set("_txlock", "immediate")
		// A rollback journal, not write-ahead logging: WAL maps its -shm file into memory,
		// and a write to that map once the file cannot be written (made immutable, a full
		// disk) is SIGBUS, which kills the process where it stands. A rollback journal
		// fails with an error instead. Readers wait on writers through the busy timeout.
		q.Set("_journal_mode", "DELETE")
	}
	dsn := "file:" + abs + "?" + q.Encode()
	return sqlite.Open(dsn), "sqlite", abs, nil
}

// RedactURL removes the password of a URL for messages, also from a URL that does not parse.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if pw := urlPassword(raw); pw != "" {
			return strings.ReplaceAll(raw, pw, "xxxxx")
		}
		return raw
	}
	if u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// Open opens (and, unless readOnly, creates the schema of) a study database.
//
// A storage argument that names no database (blank, a device, a file that is not SQLite) is
// refused with an error wrapping ErrBadStorage, and a database with another program's tables
// with one wrapping ErrForeignDatabase, before anything is written. No error holds the URL's
// password.
func Open(ctx context.Context, raw string, readOnly bool) (*Store, error) {
	s, err := open(ctx, raw, readOnly)
	return s, redactErr(raw, err)
}

func open(ctx context.Context, raw string, readOnly bool) (*Store, error) {
	dial, dialect, path, err := parseStorage(raw, readOnly)
	if err != nil {
		return nil, err
	}
	if path != "" && readOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("no study database at %s: %w", path, err)
		}
	}
	if path != "" && !readOnly {
		// An existing file is looked at read-only first: opening it to write would turn it
		// to write-ahead logging, a change to a file that may be another program's.
		if _, err := os.Stat(path); err == nil {
			if err := checkForeignFile(path, RedactURL(raw)); err != nil {
				return nil, err
			}
		}
	}
	db, err := openRetrying(ctx, dial)
	if err != nil {
		return nil, fmt.Errorf("open study database %s: %w", RedactURL(raw), err)
	}
	// Writes must outlive a cancelled run: an interrupted trial is still recorded.
	s := &Store{DB: db.WithContext(context.WithoutCancel(ctx)), gs: rdb.NewStorage(db), dialect: dialect, path: path, Display: RedactURL(raw), interrupt: ctx}
	if dialect == "sqlite" {
		sqlDB, err := db.DB()
		if err != nil {
			return nil, err
		}
		// One connection: goroutines of this process take turns; other processes wait on
		// the busy timeout.
		sqlDB.SetMaxOpenConns(1)
	}
	if readOnly {
		if err := s.checkForeign(); err != nil {
			s.Close()
			return nil, err
		}
	}
	if !readOnly {
		if err := s.migrate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	sqlDB, err := s.DB.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// migrate creates goptuna's tables when they are missing.
func (s *Store) migrate(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = s.checkForeign(); errors.Is(err, ErrForeignDatabase) {
			return err
		}
		switch {
		case err != nil:
		case s.dialect == "mysql":
			err = rdb.RunAutoMigrate(s.DB)
		default:
			// One worker at a time creates the schema (several hosts may start together).
			err = s.DB.Transaction(func(tx *gorm.DB) error {
				if s.dialect == "postgres" {
					if err := tx.Exec("SELECT pg_advisory_xact_lock(7236156)").Error; err != nil {
						return err
					}
				}
				return rdb.RunAutoMigrate(tx)
			})
		}
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(100*(attempt+1)) * time.Millisecond)
	}
	if err != nil {
		return s.WriteErr("create the study schema", err)
	}
	return nil
}

// WriteErr wraps a failed write, recognising a read-only or locked SQLite file.
func (s *Store) WriteErr(what string, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "readonly") || strings.Contains(msg, "read-only") || strings.Contains(msg, "unable to open") {
		return fmt.Errorf("%s in %s: %w (%v)", what, s.Display, ErrReadOnly, err)
	}
	if strings.Contains(msg, "disk I/O error") {
		// Mid-run (the files made immutable, a full disk): a runtime failure, not the input's.
		return fmt.Errorf("%s in %s: the study database cannot be written (%v); once it can, the next apply measures the unrecorded trials again", what, s.Display, err)
	}
	if strings.Contains(msg, "database is locked") {
		return fmt.Errorf("%s in %s: the database stayed locked by another process for 30s: %w", what, s.Display, err)
	}
	return fmt.Errorf("%s in %s: %w", what, s.Display, err)
}

func (s *Store) quote(id string) string {
	if s.dialect == "mysql" {
		return "`" + id + "`"
	}
	return `"` + id + `"`
}

// LockStudy serialises claims on one study: a row lock on PostgreSQL and MySQL; SQLite
// transactions are already exclusive (BEGIN IMMEDIATE).
func (s *Store) LockStudy(tx *gorm.DB, studyID int) error {
	if s.dialect == "sqlite" {
		return nil
	}
	var id int
	return tx.Raw("SELECT study_id FROM studies WHERE study_id = ? FOR UPDATE", studyID).Scan(&id).Error
}

// setAttr inserts or replaces one attribute.
func (s *Store) setAttr(tx *gorm.DB, t attrTable, owner int, key, value string) error {
	res := tx.Exec(fmt.Sprintf("UPDATE %s SET %s = ? WHERE %s = ? AND %s = ?", t.table, s.quote("value"), t.ownerCol, s.quote("key")),
		value, owner, key)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected > 0 {
		return nil
	}
	return tx.Exec(fmt.Sprintf("INSERT INTO %s (%s, %s, %s) VALUES (?, ?, ?)", t.table, t.ownerCol, s.quote("key"), s.quote("value")),
		owner, key, value).Error
}

// deleteAttrs removes the attributes whose key starts with prefix.
func (s *Store) deleteAttrs(tx *gorm.DB, t attrTable, owner int, prefix string) error {
	return tx.Exec(fmt.Sprintf("DELETE FROM %s WHERE %s = ? AND %s LIKE ?", t.table, t.ownerCol, s.quote("key")),
		owner, prefix+"%").Error
}

// setChunked stores a long value as prefix:0000, prefix:0001, ... replacing what was there.
func (s *Store) setChunked(tx *gorm.DB, t attrTable, owner int, prefix, value string) error {
	if err := s.deleteAttrs(tx, t, owner, prefix+":"); err != nil {
		return err
	}
	runes := []rune(value)
	for i, n := 0, 0; i < len(runes) || n == 0; i, n = i+chunkSize, n+1 {
		end := min(i+chunkSize, len(runes))
		key := fmt.Sprintf("%s:%04d", prefix, n)
		if err := tx.Exec(fmt.Sprintf("INSERT INTO %s (%s, %s, %s) VALUES (?, ?, ?)", t.table, t.ownerCol, s.quote("key"), s.quote("value")),
			owner, key, string(runes[i:end])).Error; err != nil {
			return err
		}
	}
	return nil
}

// getChunked reassembles a value stored by setChunked; ok is false when there is none.
func getChunked(attrs map[string]string, prefix string) (string, bool) {
	var keys []string
	for k := range attrs {
		if strings.HasPrefix(k, prefix+":") {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "", false
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(attrs[k])
	}
	return b.String(), true
}

// StudyMeta is what a study keeps about itself in its attributes.
type StudyMeta struct {
	PlanHash  string
	SpaceHash string
	Budget    int
	Header    record.Study // without trials
}

// StudyNames lists the studies in the database, sorted.
func (s *Store) StudyNames() ([]string, error) {
	var rows []studyRow
	if err := s.DB.Order("study_name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list studies in %s: %w", s.Display, err)
	}
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Name
	}
	return names, nil
}

// StudyID finds a study by name; ok is false when there is none.
func (s *Store) StudyID(name string) (int, bool, error) {
	var rows []studyRow
	if err := s.DB.Where("study_name = ?", name).Limit(1).Find(&rows).Error; err != nil {
		return 0, false, fmt.Errorf("find study %q in %s: %w", name, s.Display, err)
	}
	if len(rows) == 0 {
		return 0, false, nil
	}
	return rows[0].ID, true, nil
}

// EnsureStudy creates the study, or checks that the existing one has the same search
// space, and records the plan's hash, the budget and the header.
func (s *Store) EnsureStudy(ctx context.Context, name string, m StudyMeta) (int, error) {
	var id int
	err := s.DB.Transaction(func(tx *gorm.DB) error {
		var rows []studyRow
		if err := tx.Where("study_name = ?", name).Limit(1).Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			row := studyRow{Name: name, Direction: "MINIMIZE"}
			if err := tx.Create(&row).Error; err != nil {
				return err
			}
			id = row.ID
			if err := s.setAttr(tx, studySystemAttrs, id, attrSpaceHash, m.SpaceHash); err != nil {
				return err
			}
		} else {
			id = rows[0].ID
			if err := s.LockStudy(tx, id); err != nil {
				return err
			}
			var have []struct{ V string }
			if err := tx.Raw(fmt.Sprintf("SELECT %s AS v FROM study_system_attributes WHERE study_id = ? AND %s = ?", s.quote("value"), s.quote("key")),
				id, attrSpaceHash).Scan(&have).Error; err != nil {
				return err
			}
			if len(have) > 0 && have[0].V != m.SpaceHash {
				return fmt.Errorf("study %q in %s: %w (stored %.12s, plan %.12s); its trials would not be comparable: give the study a new name or use a new --storage",
					name, s.Display, ErrSpaceChanged, have[0].V, m.SpaceHash)
			}
		}
		if err := s.setAttr(tx, studySystemAttrs, id, attrPlanHash, m.PlanHash); err != nil {
			return err
		}
		if err := s.setAttr(tx, studySystemAttrs, id, attrBudget, fmt.Sprint(m.Budget)); err != nil {
			return err
		}
		hdr, err := json.Marshal(m.Header)
		if err != nil {
			return err
		}
		if err := s.setChunked(tx, studySystemAttrs, id, attrMeta, string(hdr)); err != nil {
			return err
		}
		var objs []string
		for _, o := range m.Header.Objectives {
			dir := "minimize"
			if o.Maximize {
				dir = "maximize"
			}
			objs = append(objs, o.Name+" ("+dir+")")
		}
		return s.setAttr(tx, studyUserAttrs, id, "objectives", strings.Join(objs, ", "))
	})
	if errors.Is(err, ErrSpaceChanged) {
		return 0, err
	}
	if err != nil {
		return 0, s.WriteErr(fmt.Sprintf("open study %q", name), err)
	}
	return id, nil
}

// Claim is a trial this process holds: its row and number, and its configuration.
type Claim struct {
	TrialID int
	Number  int
	Config  map[string]any
	// Rerun is true when the trial was interrupted before and is being measured again.
	Rerun bool
	Start time.Time
	// Warm names the earlier study a Warm start took the configuration from.
	Warm string
}

// ClaimWaiting takes the oldest waiting trial (interrupted, or queued by a warm start).
func (s *Store) ClaimWaiting(studyID int, owner string) (*Claim, error) {
	var c *Claim
	err := s.transaction(func(tx *gorm.DB, _ bool) error {
		c = nil
		if err := s.LockStudy(tx, studyID); err != nil {
			return err
		}
		var rows []TrialRow
		if err := tx.Where("study_id = ? AND state = ?", studyID, DBWaiting).Order("number").Limit(1).Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		r := rows[0]
		attrs, err := s.trialAttrs(tx, r.ID)
		if err != nil {
			return err
		}
		raw, _ := getChunked(attrs, attrConfig)
		var cfg map[string]any
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			return fmt.Errorf("trial %d: stored configuration: %w", r.Number, err)
		}
		now := time.Now()
		if err := tx.Model(&TrialRow{}).Where("trial_id = ?", r.ID).Updates(map[string]any{"state": DBRunning, "datetime_start": now}).Error; err != nil {
			return err
		}
		if err := s.setOwner(tx, r.ID, owner, now); err != nil {
			return err
		}
		c = &Claim{TrialID: r.ID, Number: r.Number, Config: cfg, Rerun: record.State(attrs[AttrState]) == record.StateInterrupted, Start: now, Warm: attrs[AttrWarmStart]}
		return nil
	})
	if err != nil {
		return nil, s.WriteErr("claim a waiting trial", err)
	}
	return c, nil
}

func (s *Store) setOwner(tx *gorm.DB, trialID int, owner string, now time.Time) error {
	if err := s.setAttr(tx, trialSystemAttrs, trialID, attrOwner, owner); err != nil {
		return err
	}
	if err := s.setAttr(tx, trialSystemAttrs, trialID, attrHeartbeat, now.UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	return s.setAttr(tx, trialSystemAttrs, trialID, AttrState, string(record.StateRunning))
}

func (s *Store) trialAttrs(tx *gorm.DB, trialID int) (map[string]string, error) {
	var rows []struct{ K, V string }
	if err := tx.Raw(fmt.Sprintf("SELECT %s AS k, %s AS v FROM trial_system_attributes WHERE trial_id = ?", s.quote("key"), s.quote("value")),
		trialID).Scan(&rows).Error; err != nil {
		return nil, err
	}
	m := make(map[string]string, len(rows))
	for _, r := range rows {
		m[r.K] = r.V
	}
	return m, nil
}

// NewTrial is a configuration to claim as a new trial.
type NewTrial struct {
	Config map[string]any
	Key    string
	Params []ParamRow // TrialID is filled in
	Attrs  map[string]string
	State  string // dbRunning, or dbWaiting for a queued trial
	// Final, when set, stores the trial finished at once (a pre-screened configuration):
	// its record, goptuna state and value. It does not count against the budget.
	Final *FinalTrial
}

type FinalTrial struct {
	Rec     *record.Trial
	DBState string
	Value   float64
}

// ClaimStatus says why claimNew did not claim.
type ClaimStatus int

const (
	Claimed ClaimStatus = iota
	ClaimDuplicate
	ClaimBudgetMet
)

// ClaimNew creates a trial for a configuration, unless the study already holds budget
// trials or a trial of the same configuration. The study's row lock makes the count and
// the duplicate check hold across processes and hosts.
func (s *Store) ClaimNew(studyID, budget int, nt NewTrial, owner string) (*Claim, ClaimStatus, error) {
	var c *Claim
	var status ClaimStatus
	err := s.transaction(func(tx *gorm.DB, retry bool) error {
		c, status = nil, Claimed
		if err := s.LockStudy(tx, studyID); err != nil {
			return err
		}
		var n, counted int64
		if err := tx.Model(&TrialRow{}).Where("study_id = ?", studyID).Count(&n).Error; err != nil {
			return err
		}
		if err := tx.Raw(fmt.Sprintf("SELECT COUNT(*) FROM trials t WHERE t.study_id = ? AND NOT EXISTS (SELECT 1 FROM trial_system_attributes a WHERE a.trial_id = t.trial_id AND a.%s = ?)", s.quote("key")),
			studyID, AttrPreScreened).Scan(&counted).Error; err != nil {
			return err
		}
		if budget >= 0 && int(counted) >= budget && nt.Final == nil {
			status = ClaimBudgetMet
			return nil
		}
		var dup int64
		if err := tx.Raw(fmt.Sprintf("SELECT COUNT(*) FROM trial_system_attributes a JOIN trials t ON a.trial_id = t.trial_id WHERE t.study_id = ? AND a.%s = ? AND a.%s = ?", s.quote("key"), s.quote("value")),
			studyID, AttrConfigKey, nt.Key).Scan(&dup).Error; err != nil {
			return err
		}
		if dup > 0 {
			if retry {
				// An earlier attempt may have committed before the connection was lost.
				if mine, err := s.ownRunningTrial(tx, studyID, nt.Key, owner); err != nil || mine != nil {
					c = mine
					return err
				}
			}
			status = ClaimDuplicate
			return nil
		}
		now := time.Now()
		state := nt.State
		if state == "" {
			state = DBRunning
		}
		row := TrialRow{Number: int(n), StudyID: studyID, State: state, DatetimeStart: &now}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		for _, p := range nt.Params {
			p.TrialID = row.ID
			if err := tx.Create(&p).Error; err != nil {
				return err
			}
		}
		cfgJSON, err := json.Marshal(nt.Config)
		if err != nil {
			return err
		}
		if err := s.setChunked(tx, trialSystemAttrs, row.ID, attrConfig, string(cfgJSON)); err != nil {
			return err
		}
		if err := s.setAttr(tx, trialSystemAttrs, row.ID, AttrConfigKey, nt.Key); err != nil {
			return err
		}
		keys := make([]string, 0, len(nt.Attrs))
		for k := range nt.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := s.setAttr(tx, trialSystemAttrs, row.ID, k, nt.Attrs[k]); err != nil {
				return err
			}
		}
		switch {
		case nt.Final != nil:
			nt.Final.Rec.Number = row.Number
			raw, err := json.Marshal(nt.Final.Rec)
			if err != nil {
				return err
			}
			recJSON := s.scrub(string(raw))
			if err := tx.Model(&TrialRow{}).Where("trial_id = ?", row.ID).Updates(map[string]any{
				"state": nt.Final.DBState, "value": nt.Final.Value, "datetime_complete": now}).Error; err != nil {
				return err
			}
			if err := s.setChunked(tx, trialSystemAttrs, row.ID, attrRecord, recJSON); err != nil {
				return err
			}
			if err := s.setAttr(tx, trialSystemAttrs, row.ID, AttrPreScreened, "true"); err != nil {
				return err
			}
			if err := s.setAttr(tx, trialSystemAttrs, row.ID, AttrState, string(nt.Final.Rec.State)); err != nil {
				return err
			}
			if err := s.setAttr(tx, trialUserAttrs, row.ID, "reason", s.scrub(record.Truncate(nt.Final.Rec.Reason, 2000))); err != nil {
				return err
			}
		case state == DBRunning:
			if err := s.setOwner(tx, row.ID, owner, now); err != nil {
				return err
			}
		default:
			if err := s.setAttr(tx, trialSystemAttrs, row.ID, AttrState, string(record.StateWaiting)); err != nil {
				return err
			}
		}
		c = &Claim{TrialID: row.ID, Number: row.Number, Config: nt.Config, Start: now}
		return nil
	})
	if err != nil {
		return nil, 0, s.WriteErr("claim a trial", err)
	}
	return c, status, nil
}

// ownRunningTrial is the running trial of configuration key that owner holds, or nil.
func (s *Store) ownRunningTrial(tx *gorm.DB, studyID int, key, owner string) (*Claim, error) {
	var ids []int
	if err := tx.Raw(fmt.Sprintf("SELECT a.trial_id FROM trial_system_attributes a JOIN trials t ON a.trial_id = t.trial_id WHERE t.study_id = ? AND t.state = ? AND a.%s = ? AND a.%s = ?", s.quote("key"), s.quote("value")),
		studyID, DBRunning, AttrConfigKey, key).Scan(&ids).Error; err != nil || len(ids) != 1 {
		return nil, err
	}
	attrs, err := s.trialAttrs(tx, ids[0])
	if err != nil || attrs[attrOwner] != owner {
		return nil, err
	}
	var rows []TrialRow
	if err := tx.Where("trial_id = ?", ids[0]).Limit(1).Find(&rows).Error; err != nil || len(rows) == 0 {
		return nil, err
	}
	raw, _ := getChunked(attrs, attrConfig)
	var cfg map[string]any
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return nil, fmt.Errorf("trial %d: stored configuration: %w", rows[0].Number, err)
	}
	start := time.Now()
	if rows[0].DatetimeStart != nil {
		start = *rows[0].DatetimeStart
	}
	return &Claim{TrialID: ids[0], Number: rows[0].Number, Config: cfg, Start: start}, nil
}

// ErrLostClaim is returned when a trial this process ran was taken from it meanwhile (it
// was judged stale); its result is not stored, so no trial is counted twice.
var ErrLostClaim = errors.New("the trial was reclaimed by another process")

// Finish stores a trial's record and final state in one transaction, provided this process
// still holds it.
func (s *Store) Finish(c *Claim, owner string, rec *record.Trial, dbState string, value float64, userAttrs map[string]string) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	recJSON := s.scrub(string(raw))
	for k, v := range userAttrs {
		userAttrs[k] = s.scrub(v)
	}
	err = s.transaction(func(tx *gorm.DB, retry bool) error {
		var rows []TrialRow
		if err := tx.Where("trial_id = ?", c.TrialID).Limit(1).Find(&rows).Error; err != nil {
			return err
		}
		attrs, err := s.trialAttrs(tx, c.TrialID)
		if err != nil {
			return err
		}
		if stored, _ := getChunked(attrs, attrRecord); retry && len(rows) == 1 && rows[0].State == dbState && attrs[attrOwner] == owner && stored == recJSON {
			return nil // an earlier attempt committed before the connection was lost
		}
		if len(rows) == 0 || rows[0].State != DBRunning || attrs[attrOwner] != owner {
			return ErrLostClaim
		}
		now := time.Now()
		upd := map[string]any{"state": dbState, "value": value}
		if dbState != DBWaiting {
			upd["datetime_complete"] = now
		}
		if err := tx.Model(&TrialRow{}).Where("trial_id = ?", c.TrialID).Updates(upd).Error; err != nil {
			return err
		}
		if err := s.setChunked(tx, trialSystemAttrs, c.TrialID, attrRecord, recJSON); err != nil {
			return err
		}
		if err := s.setAttr(tx, trialSystemAttrs, c.TrialID, AttrState, string(rec.State)); err != nil {
			return err
		}
		keys := make([]string, 0, len(userAttrs))
		for k := range userAttrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := s.setAttr(tx, trialUserAttrs, c.TrialID, k, userAttrs[k]); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, ErrLostClaim) {
		return err
	}
	if err != nil {
		return s.WriteErr(fmt.Sprintf("record trial %d", c.Number), err)
	}
	return nil
}

// Heartbeat tells other processes this trial is still being worked on.
func (s *Store) Heartbeat(trialID int) error {
	return s.transaction(func(tx *gorm.DB, _ bool) error {
		return s.setAttr(tx, trialSystemAttrs, trialID, attrHeartbeat, time.Now().UTC().Format(time.RFC3339Nano))
	})
}

// Lease is who holds a running trial: its owner (host/pid/start of the process measuring
// it) and the owner's last heartbeat.
type Lease struct {
	Number    int
	Owner     string
	Heartbeat time.Time
}

// Leases lists the study's running trials with their owners and last heartbeats, by number.
func (s *Store) Leases(studyID int) ([]Lease, error) {
	var rows []TrialRow
	if err := s.DB.Where("study_id = ? AND state = ?", studyID, DBRunning).Order("number").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read running trials from %s: %w", s.Display, err)
	}
	out := make([]Lease, 0, len(rows))
	for _, r := range rows {
		attrs, err := s.trialAttrs(s.DB, r.ID)
		if err != nil {
			return nil, fmt.Errorf("read running trials from %s: %w", s.Display, err)
		}
		beat, _ := time.Parse(time.RFC3339Nano, attrs[attrHeartbeat])
		out = append(out, Lease{Number: r.Number, Owner: attrs[attrOwner], Heartbeat: beat})
	}
	return out, nil
}

// RepairStale returns running trials whose process is gone to the waiting queue, recorded
// as interrupted, so that the next claim measures them again. stale decides from a trial's
// owner and last heartbeat.
func (s *Store) RepairStale(studyID int, stale func(owner string, beat time.Time) bool) ([]int, error) {
	var repaired []int
	err := s.DB.Transaction(func(tx *gorm.DB) error {
		if err := s.LockStudy(tx, studyID); err != nil {
			return err
		}
		var rows []TrialRow
		if err := tx.Where("study_id = ? AND state = ?", studyID, DBRunning).Order("number").Find(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			attrs, err := s.trialAttrs(tx, r.ID)
			if err != nil {
				return err
			}
			beat, _ := time.Parse(time.RFC3339Nano, attrs[attrHeartbeat])
			if !stale(attrs[attrOwner], beat) {
				continue
			}
			if err := tx.Model(&TrialRow{}).Where("trial_id = ?", r.ID).Update("state", DBWaiting).Error; err != nil {
				return err
			}
			if err := s.setAttr(tx, trialSystemAttrs, r.ID, AttrState, string(record.StateInterrupted)); err != nil {
				return err
			}
			if err := s.setAttr(tx, trialUserAttrs, r.ID, "reason", "the process measuring it stopped without finishing ("+attrs[attrOwner]+")"); err != nil {
				return err
			}
			repaired = append(repaired, r.Number)
		}
		return nil
	})
	if err != nil {
		return nil, s.WriteErr("repair stale trials", err)
	}
	return repaired, nil
}

// ClaimConfirmation marks a finished trial as being re-measured by owner, unless another
// live process already does it.
func (s *Store) ClaimConfirmation(studyID, trialID int, owner string, stale func(owner string, beat time.Time) bool) (bool, error) {
	ok := false
	err := s.DB.Transaction(func(tx *gorm.DB) error {
		if err := s.LockStudy(tx, studyID); err != nil {
			return err
		}
		attrs, err := s.trialAttrs(tx, trialID)
		if err != nil {
			return err
		}
		if cur := attrs[attrConfirming]; cur != "" {
			who, when, _ := strings.Cut(cur, "@")
			t, _ := time.Parse(time.RFC3339Nano, when)
			if !stale(who, t) {
				return nil
			}
		}
		ok = true
		return s.setAttr(tx, trialSystemAttrs, trialID, attrConfirming, owner+"@"+time.Now().UTC().Format(time.RFC3339Nano))
	})
	if err != nil {
		return false, s.WriteErr("claim a confirmation run", err)
	}
	return ok, nil
}

// AddConfirmation appends the objectives of a repeat run, and their sampling intervals (ci,
// nil when none), to a finished trial's record. A non-nil miss is a run that missed an SLO,
// check or gate: the trial becomes infeasible with the miss's reason and violation, and
// goptuna's row stores missValue (the sampler's score of it).
func (s *Store) AddConfirmation(trialID int, objectives map[string]float64, ci map[string][2]float64, gpuSeconds float64, miss *record.Trial, missValue float64) error {
	err := s.DB.Transaction(func(tx *gorm.DB) error {
		attrs, err := s.trialAttrs(tx, trialID)
		if err != nil {
			return err
		}
		raw, ok := getChunked(attrs, attrRecord)
		if !ok {
			return fmt.Errorf("trial %d has no record", trialID)
		}
		var rec record.Trial
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return err
		}
		// The intervals line up with the runs: a record from before they were kept gets
		// none for its earlier runs.
		for len(rec.ConfirmationCI) < len(rec.Confirmations) {
			rec.ConfirmationCI = append(rec.ConfirmationCI, nil)
		}
		rec.Confirmations = append(rec.Confirmations, objectives)
		rec.ConfirmationCI = append(rec.ConfirmationCI, ci)
		rec.ConfirmGPUSeconds += gpuSeconds
		if miss != nil {
			rec.State = record.StateInfeasible
			rec.Reason = miss.Reason
			rec.Violation = miss.Violation
			rec.ConfirmFailed = true
			if err := tx.Model(&TrialRow{}).Where("trial_id = ?", trialID).Update("value", missValue).Error; err != nil {
				return err
			}
			if err := s.setAttr(tx, trialSystemAttrs, trialID, AttrState, string(rec.State)); err != nil {
				return err
			}
			if err := s.setAttr(tx, trialUserAttrs, trialID, "state", string(rec.State)); err != nil {
				return err
			}
			if err := s.setAttr(tx, trialUserAttrs, trialID, "reason", s.scrub(record.Truncate(rec.Reason, 2000))); err != nil {
				return err
			}
		}
		out, err := json.Marshal(&rec)
		if err != nil {
			return err
		}
		if err := s.setChunked(tx, trialSystemAttrs, trialID, attrRecord, s.scrub(string(out))); err != nil {
			return err
		}
		return s.deleteAttrs(tx, trialSystemAttrs, trialID, attrConfirming)
	})
	if err != nil {
		return s.WriteErr("record a confirmation run", err)
	}
	return nil
}

// ReleaseConfirmation gives up a confirmation claim (interrupted).
func (s *Store) ReleaseConfirmation(trialID int) error {
	return s.DB.Transaction(func(tx *gorm.DB) error {
		return s.deleteAttrs(tx, trialSystemAttrs, trialID, attrConfirming)
	})
}

// MarkWarmStarted records that the warm start's configurations were queued, once; ok is
// false when another process did it first.
func (s *Store) MarkWarmStarted(tx *gorm.DB, studyID int, source string) (bool, error) {
	var have []struct{ V string }
	if err := tx.Raw(fmt.Sprintf("SELECT %s AS v FROM study_system_attributes WHERE study_id = ? AND %s = ?", s.quote("value"), s.quote("key")),
		studyID, AttrWarmStarted).Scan(&have).Error; err != nil {
		return false, err
	}
	if len(have) > 0 {
		return false, nil
	}
	return true, s.setAttr(tx, studySystemAttrs, studyID, AttrWarmStarted, source)
}

// AllTrials reads every trial of a study through goptuna's storage.
func (s *Store) AllTrials(studyID int) ([]goptuna.FrozenTrial, error) {
	ts, err := s.gs.GetAllTrials(studyID)
	if err != nil {
		return nil, fmt.Errorf("read trials from %s: %w", s.Display, err)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Number < ts[j].Number })
	return ts, nil
}

// studyAttrs reads a study's system attributes.
func (s *Store) studyAttrs(studyID int) (map[string]string, error) {
	a, err := s.gs.GetStudySystemAttrs(studyID)
	if err != nil {
		return nil, fmt.Errorf("read study from %s: %w", s.Display, err)
	}
	return a, nil
}

// attrBaseline prefixes a quality gate's baseline outcome in the study's system attributes:
// frontier:baseline:<gate>:<space hash>, as JSON split like a trial's record.
const attrBaseline = "frontier:baseline:"

// BaselineKey is the attribute of a gate's baseline outcome for a search space.
func BaselineKey(gate, spaceHash string) string {
	return attrBaseline + gate + ":" + spaceHash
}

// studyAttrsTx reads a study's system attributes whose key starts with prefix.
func (s *Store) studyAttrsTx(tx *gorm.DB, studyID int, prefix string) (map[string]string, error) {
	var rows []struct{ K, V string }
	if err := tx.Raw(fmt.Sprintf("SELECT %s AS k, %s AS v FROM study_system_attributes WHERE study_id = ? AND %s LIKE ?", s.quote("key"), s.quote("value"), s.quote("key")),
		studyID, prefix+"%").Scan(&rows).Error; err != nil {
		return nil, err
	}
	m := make(map[string]string, len(rows))
	for _, r := range rows {
		m[r.K] = r.V
	}
	return m, nil
}

// StoredBaseline reads the baseline outcome stored under key; ok is false when there is none.
func (s *Store) StoredBaseline(studyID int, key string) (o *quality.Outcome, ok bool, err error) {
	attrs, err := s.studyAttrsTx(s.DB, studyID, key+":")
	if err != nil {
		return nil, false, fmt.Errorf("read the quality baseline from %s: %w", s.Display, err)
	}
	raw, ok := getChunked(attrs, key)
	if !ok {
		return nil, false, nil
	}
	o = &quality.Outcome{}
	if err := json.Unmarshal([]byte(raw), o); err != nil {
		return nil, false, fmt.Errorf("quality baseline %s in %s: %w", key, s.Display, err)
	}
	return o, true, nil
}

// KeepBaseline stores a baseline outcome under key unless another process stored one
// first; it returns the outcome the study keeps, which every process then uses.
func (s *Store) KeepBaseline(studyID int, key string, o *quality.Outcome) (*quality.Outcome, error) {
	raw, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	kept := o
	err = s.DB.Transaction(func(tx *gorm.DB) error {
		if err := s.LockStudy(tx, studyID); err != nil {
			return err
		}
		attrs, err := s.studyAttrsTx(tx, studyID, key+":")
		if err != nil {
			return err
		}
		if have, ok := getChunked(attrs, key); ok {
			var prev quality.Outcome
			if err := json.Unmarshal([]byte(have), &prev); err == nil {
				kept = &prev
				return nil
			}
		}
		return s.setChunked(tx, studySystemAttrs, studyID, key, s.scrub(string(raw)))
	})
	if err != nil {
		return nil, s.WriteErr("store the quality baseline", err)
	}
	return kept, nil
}

// LogDir is the folder of a study's engine logs: a folder named after the study, beside a
// SQLite database (<db>.logs/<study>/) or, for a server database, in the working directory
// (frontier-logs/<study>/), so that two studies never write each other's trial logs.
func (s *Store) LogDir(study string) string {
	base := "frontier-logs"
	if s.path != "" {
		base = s.path + ".logs"
	}
	return filepath.Join(base, folderName(study))
}

// maxFolderName is the longest folder name folderName returns, well under the 255 bytes a
// file name may have on Linux and macOS.
const maxFolderName = 96

// folderName is a study name made into one folder name that no other study name gets. A
// name of letters, digits, '.', '-' and '_' of at most maxFolderName bytes, other than "."
// and "..", is its own folder name (so the folders of such studies are where earlier
// releases put them). Any other name has its other characters replaced by '_', is cut to
// leave room, and gets '+' and the first 12 hex digits of the SHA-256 of the exact name:
// '+' never occurs in a name kept as it is, and the hash tells "a/b" from "a_b" and "a b".
func folderName(study string) string {
	safe := study != "" && len(study) <= maxFolderName && strings.Trim(study, ".") != ""
	b := []byte(study)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
			safe = false
		}
	}
	if safe {
		return study
	}
	sum := sha256.Sum256([]byte(study))
	tag := "+" + hex.EncodeToString(sum[:6])
	if len(b) > maxFolderName-len(tag) {
		b = b[:maxFolderName-len(tag)]
	}
	return string(b) + tag
}

// openBusyWait bounds how long opening a SQLite database waits while another process holds
// it: setting the journal mode takes a lock that SQLite's busy timeout does not wait for.
// With a rollback journal a writer's lock blocks readers too, so this outlasts a few busy
// timeouts; a signal still ends the wait at once (search.Run does not wait for it).
const openBusyWait = 2 * time.Minute

// openRetrying opens the database, trying again while SQLite says another process holds it,
// for at most openBusyWait.
func openRetrying(ctx context.Context, dial gorm.Dialector) (*gorm.DB, error) {
	deadline := time.Now().Add(openBusyWait)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		db, err := gorm.Open(dial, &gorm.Config{Logger: logger.Discard})
		var se sqlite3.Error
		if err == nil || !errors.As(err, &se) || (se.Code != sqlite3.ErrBusy && se.Code != sqlite3.ErrLocked) || time.Now().After(deadline) {
			return db, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// isFile reports whether path names a regular file.
func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
