package report

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteFileKeepsTheOldFileOnFailure(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		write   func(io.Writer) error
		wantErr error
		want    string
	}{
		{"success replaces the file", func(w io.Writer) error { _, err := io.WriteString(w, "new report"); return err }, nil, "new report"},
		{"failure half way keeps the old file", func(w io.Writer) error {
			if _, err := io.WriteString(w, "half a rep"); err != nil {
				return err
			}
			return boom
		}, boom, "old report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "report.html")
			if err := os.WriteFile(path, []byte("old report"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := WriteFile(path, tc.write); !errors.Is(err, tc.wantErr) {
				t.Fatalf("WriteFile error = %v, want %v", err, tc.wantErr)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("file content (-want +got):\n%s", diff)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("the folder holds %d entries, want only the report (no temporary file left)", len(entries))
			}
		})
	}
}
