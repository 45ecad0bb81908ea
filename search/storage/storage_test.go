package storage

import (
	"path/filepath"
	"testing"
)

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
		{file, "../../etc", filepath.Join("data", "s.db.logs", ".._.._etc")},
		{file, "..", filepath.Join("data", "s.db.logs", "_..")},
		{file, "a b/c", filepath.Join("data", "s.db.logs", "a_b_c")},
	} {
		if got := tc.st.LogDir(tc.study); got != tc.want {
			t.Errorf("LogDir(%q) = %q, want %q", tc.study, got, tc.want)
		}
	}
}
