package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/frontier-llm/frontier/record"
)

// FuzzReport feeds arbitrary study records to every renderer, export and comparison: whatever
// a study database or a JSON file holds, no report panics.
func FuzzReport(f *testing.F) {
	for _, name := range []string{"quickstart.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"study":"s","objectives":[{"name":"a","maximize":true}],"trials":[{"number":0,"state":"complete","config":{"x":1},"objectives":{"a":1}}],"front":[0,5]}`))
	f.Add([]byte(`{"study":"s","objectives":[{"name":"a"},{"name":"b"}],"knobs":["x"],"trials":[{"number":1,"state":"complete","config":{"x":"y"},"objectives":{"a":1},"series":[{"t":0}],"total":{"metrics":{},"quantiles":{"ttft_ms":[1]}}}],"front":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := DecodeRecord(bytes.NewReader(data))
		if err != nil {
			return
		}
		a := Analyze(rec)
		for _, w := range []func(io.Writer) error{
			func(w io.Writer) error { return WriteText(w, a, Options{All: true}) },
			func(w io.Writer) error { return WriteMarkdown(w, a, Options{All: true}) },
			func(w io.Writer) error { return WriteHTML(w, a, Options{All: true}) },
			func(w io.Writer) error { return WriteJSON(w, a) },
			func(w io.Writer) error {
				return WriteCompareText(w, Compare([]string{"a", "b"}, []*record.Study{rec, rec}))
			},
		} {
			_ = w(io.Discard) // errors are fine (NaN in JSON, say); panics are not
		}
		for i := range rec.Trials {
			for _, format := range ExportFormats() {
				_ = Export(io.Discard, rec, &rec.Trials[i], format)
			}
		}
	})
}
