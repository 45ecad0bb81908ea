package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
)

func hash12(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

func TestLogDirIsOneFolderPerStudy(t *testing.T) {
	t.Parallel()
	file := &Store{path: filepath.Join("data", "s.db")}
	server := &Store{}
	for _, tc := range []struct {
		st    *Store
		study string
		want  string
	}{
		{file, "chat-8b", filepath.Join("data", "s.db.logs", "chat-8b")},
		{file, "other", filepath.Join("data", "s.db.logs", "other")},
		{server, "chat-8b", filepath.Join("frontier-logs", "chat-8b")},
		{file, "a_b", filepath.Join("data", "s.db.logs", "a_b")},
		{file, "../../etc", filepath.Join("data", "s.db.logs", ".._.._etc+"+hash12("../../etc"))},
		{file, "..", filepath.Join("data", "s.db.logs", "..+"+hash12(".."))},
		{file, "a b/c", filepath.Join("data", "s.db.logs", "a_b_c+"+hash12("a b/c"))},
	} {
		if got := tc.st.LogDir(tc.study); got != tc.want {
			t.Errorf("LogDir(%q) = %q, want %q", tc.study, got, tc.want)
		}
	}
}

// TestFolderNamesOfDifferentStudiesDiffer checks that study names that differ only in the
// characters a folder name cannot hold ("a/b", "a_b", "a b", "a\\b"), names longer than a
// file name may be, and names that are only dots get folders of their own, each one safe: a
// single path element of at most maxFolderName bytes of letters, digits, '.', '-', '_' and '+'.
func TestFolderNamesOfDifferentStudiesDiffer(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	names := []string{"a/b", "a_b", "a b", "a\\b", "a\nb", "", ".", "..", "...", long, long + "y", "ünïcode", "a_b+" + hash12("a/b")}
	seen := map[string]string{}
	for _, n := range names {
		f := folderName(n)
		if prev, ok := seen[f]; ok {
			t.Errorf("folderName(%q) = folderName(%q) = %q", n, prev, f)
		}
		seen[f] = n
		if len(f) == 0 || len(f) > maxFolderName || f == "." || f == ".." || strings.Trim(f, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+") != "" {
			t.Errorf("folderName(%q) = %q: not one safe folder name", n, f)
		}
	}
}
