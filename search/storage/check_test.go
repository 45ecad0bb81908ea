package storage

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestErrorsNeverHoldTheURLPassword(t *testing.T) {
	for _, raw := range []string{
		"postgres://frontier:s3cret@db.example:notaport/studies",
		"mysql://frontier:s3cret@[::1/studies",
		"mysql://frontier:s3cret@db.example:3306/studies%zz",
		"postgresql://frontier:s3cret@db.example:5432/studies?sslmode=bogus%",
	} {
		if got := RedactURL(raw); strings.Contains(got, "s3cret") {
			t.Errorf("RedactURL(%q) = %q, holds the password", raw, got)
		}
		_, err := Open(context.Background(), raw, true)
		if err == nil {
			t.Errorf("Open(%q) succeeded", raw)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q) = %v, holds the password", raw, err)
		}
	}
}

func TestBlankAndSpecialStoragePathsAreRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, raw := range []string{" ", "sqlite:// ", "sqlite:///dev/stdout", "/dev/null", dir, " study.db"} {
		_, err := Open(context.Background(), raw, false)
		if !errors.Is(err, ErrBadStorage) {
			t.Errorf("Open(%q) = %v, want ErrBadStorage", raw, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused storage arguments left %v in the working directory", entries)
	}
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not a database at all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), text, false); !errors.Is(err, ErrBadStorage) || !strings.Contains(err.Error(), "is not a SQLite database") {
		t.Errorf("Open(a text file) = %v, want it refused as not SQLite", err)
	}
}

// foreignDB writes a SQLite database with the given schema and returns its path and bytes.
func foreignDB(t *testing.T, schema string) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(schema); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, raw
}

func TestAForeignDatabaseIsNamedAndLeftUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name, schema, says string
	}{
		{"Optuna", `CREATE TABLE studies (study_id INTEGER PRIMARY KEY, study_name VARCHAR(512));
			CREATE TABLE study_directions (study_direction_id INTEGER PRIMARY KEY, direction VARCHAR(8));
			CREATE TABLE trials (trial_id INTEGER PRIMARY KEY);
			CREATE TABLE version_info (version_info_id INTEGER PRIMARY KEY);
			CREATE TABLE alembic_version (version_num VARCHAR(32));`,
			"is an Optuna study database (it has tables alembic_version, version_info, study_directions)"},
		{"another program", `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);`,
			"is another program's database (it has the tables notes, which are not goptuna's)"},
		{"a studies table of another program", `CREATE TABLE studies (id INTEGER PRIMARY KEY);`,
			"has a studies table of another program"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, before := foreignDB(t, tc.schema)
			for _, readOnly := range []bool{false, true} {
				_, err := Open(context.Background(), path, readOnly)
				if !errors.Is(err, ErrForeignDatabase) || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("Open(readOnly %v) = %v, want ErrForeignDatabase saying %q", readOnly, err, tc.says)
				}
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Error("the foreign database was changed")
			}
		})
	}
}

func TestAFrontierDatabaseOpensAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "study.db")
	for range 2 {
		s, err := Open(context.Background(), path, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(context.Background(), path, true)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}
