package storage

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/frontier-llm/frontier/record"

	"gorm.io/gorm"
)

// attrPressure prefixes the pressure results of a configuration in the study's system
// attributes: frontier:pressure:<trial>, as JSON split like a trial's record.
const attrPressure = "frontier:pressure:"

// SavePressure keeps the pressure results of one configuration in the study, replacing
// earlier ones of the same trial.
func (s *Store) SavePressure(studyID int, p *record.Pressure) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	key := attrPressure + strconv.Itoa(p.Trial)
	err = s.DB.Transaction(func(tx *gorm.DB) error {
		return s.setChunked(tx, studySystemAttrs, studyID, key, s.scrub(string(raw)))
	})
	if err != nil {
		return s.WriteErr("store the pressure results", err)
	}
	return nil
}

// loadPressure reads every configuration's pressure results from a study's attributes, in
// trial order.
func loadPressure(attrs map[string]string) ([]record.Pressure, error) {
	trials := map[string]bool{}
	for k := range attrs {
		rest, ok := strings.CutPrefix(k, attrPressure)
		if !ok {
			continue
		}
		if i := strings.LastIndexByte(rest, ':'); i > 0 {
			trials[rest[:i]] = true
		}
	}
	var out []record.Pressure
	for t := range trials {
		raw, ok := getChunked(attrs, attrPressure+t)
		if !ok {
			continue
		}
		var p record.Pressure
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			return nil, fmt.Errorf("pressure results of trial %s: %w", t, err)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Trial < out[j].Trial })
	return out, nil
}
