package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/frontier-llm/frontier/record"
)

// DecodeRecord reads a study record from JSON: a record as stored, or the output of
// `frontier report --format json` (whose "recommended" key it ignores).
func DecodeRecord(r io.Reader) (*record.Study, error) {
	var rec record.Study
	dec := json.NewDecoder(r)
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("decode study record: %w", err)
	}
	if rec.Study == "" && len(rec.Trials) == 0 {
		return nil, fmt.Errorf("decode study record: no study and no trials: not a frontier study")
	}
	return &rec, nil
}
