package plan

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// varFilePlan declares the variables the var-file tests set.
const varFilePlan = minimal + "\nvariable \"seqs\" { default = [1] }\nvariable \"name\" { default = \"x\" }\n"

func TestAVarFileMayStartWithAByteOrderMarkAndBeJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ file, body string }{
		{"vars.hcl", "\xef\xbb\xbfname = \"bom\"\n"},
		{"vars.json", `{"name": "bom"}`},
		{"vars.json", "\xef\xbb\xbf{\"name\": \"bom\"}\n"},
		{"VARS.JSON", "\xef\xbb\xbf{\"name\": \"bom\"}\n"},
	} {
		path := filepath.Join(dir, tc.file)
		if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, vals, err := loadVarsOf(path)
		if err != nil {
			t.Errorf("%s %q: %v", tc.file, tc.body, err)
			continue
		}
		if got := vals["name"]; got != `"bom"` {
			t.Errorf("%s %q: name = %s, want \"bom\"", tc.file, tc.body, got)
		}
	}
}

// loadVarsOf loads varFilePlan with the var-file at path and returns the plan and its
// resolved variables (as JSON).
func loadVarsOf(path string) (*Plan, map[string]string, error) {
	p, err := loadSource(filepath.Join(filepath.Dir(path), "plan.hcl"), []byte(varFilePlan), LoadOptions{VarFiles: []string{path}})
	if err != nil {
		return nil, nil, err
	}
	return p, p.Variables, nil
}

// FuzzVarFile feeds arbitrary bytes to the -var-file reader, as HCL and as JSON: it must set
// the variables or return a *DiagnosticsError, never panic.
func FuzzVarFile(f *testing.F) {
	f.Add([]byte("name = \"a\"\nseqs = [1, 2]\n"), false)
	f.Add([]byte(`{"name": "a", "seqs": [1, 2]}`), true)
	f.Add([]byte("\xef\xbb\xbf{\"seqs\": [[[[1]]]]}"), true)
	f.Add([]byte("\xef\xbb\xbf\xef\xbb\xbfname = 1"), false)
	f.Add([]byte(`{"name": "${var.seqs}"}`), true)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte, asJSON bool) {
		path := filepath.Join(dir, "vars.hcl")
		if asJSON {
			path = filepath.Join(dir, "vars.json")
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loadSource(filepath.Join(dir, "plan.hcl"), []byte(varFilePlan), LoadOptions{VarFiles: []string{path}})
		var de *DiagnosticsError
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("error %v is not a *DiagnosticsError", err)
		}
	})
}
