package sim

// SKUConfidence is how sure the performance model is about one SKU: its error on the
// published measurements of sim/testdata/validation.csv, scored leaving the SKU out of the
// refit of the global constants (docs/sim.md, "Validation").
type SKUConfidence struct {
	SKU         string  `json:"sku"`
	Points      int     `json:"points"`
	MedianError float64 `json:"median_error"` // median |predicted − published| / published
	WorstError  float64 `json:"worst_error"`
	// Level is "good" (median error at most 15%), "fair" (at most 30%) or "poor".
	Level string `json:"level"`
}

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
