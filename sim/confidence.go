package sim

import "github.com/frontier-llm/frontier/record"

// SKUConfidence is how sure the performance model is about one SKU: its error on the
// published measurements of sim/testdata/validation.csv, scored leaving the SKU out of the
// refit of the global constants (docs/sim.md, "Validation"). It is the type a study record
// keeps, so that a report can say it without the model.
type SKUConfidence = record.ModelConfidence

// Confidence returns the validation result for a SKU; false when no published measurement
// of it is in the validation set, so every figure for it is unvalidated.
func Confidence(sku string) (SKUConfidence, bool) {
	c, ok := validatedConfidence[sku]
	return c, ok
}

// confidenceLevel grades a score.
func confidenceLevel(s SKUScore) string {
	switch {
	case s.MedianError <= 0.15:
		return "good"
	case s.MedianError <= 0.30:
		return "fair"
	}
	return "poor"
}
