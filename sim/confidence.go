package sim

import "github.com/frontier-llm/frontier/record"

// SKUConfidence is how sure the performance model is about one SKU: its error on the
// published measurements of sim/testdata/validation.csv, scored leaving the SKU out of the
// refit of the global constants (docs/sim.md, "Validation"). It is the type a study record
// keeps, so that a report can say it without the model.
type SKUConfidence = record.ModelConfidence

// Confidence returns the validation result for a SKU over every model family; false when no
// published measurement of it is in the validation set, so every figure for it is
// unvalidated.
func Confidence(sku string) (SKUConfidence, bool) {
	c, ok := validatedConfidence[sku]
	return c, ok
}

// ConfidenceFor returns the validation result for a model of a's family (dense or a mixture
// of experts) on a SKU: the model's error on that family's published measurements of the
// SKU, which can differ a lot from the other family's. false when none of the SKU's
// measurements is of that family; the result is then graded "unvalidated", and Confidence
// says how the SKU's other measurements scored.
func ConfidenceFor(sku string, a Arch) (SKUConfidence, bool) {
	c, ok := validatedFamilyConfidence[sku+"/"+a.Family()]
	if !ok {
		return SKUConfidence{SKU: sku, Family: a.Family(), Level: "unvalidated"}, false
	}
	return c, true
}

// ConfidenceOf is what a report says of the model's figures for a model on a SKU: the
// score of the model's family on the SKU (ConfidenceFor), followed, when that family is
// unvalidated there but the SKU has measurements of the other, by the SKU's score over
// them. Without an architecture (hasArch false) it is the SKU's score over every family,
// graded "unvalidated" when the SKU has none.
func ConfidenceOf(sku string, a Arch, hasArch bool) []SKUConfidence {
	all, ok := Confidence(sku)
	if !hasArch {
		if !ok {
			all = SKUConfidence{SKU: sku, Level: "unvalidated"}
		}
		return []SKUConfidence{all}
	}
	fam, famOK := ConfidenceFor(sku, a)
	if famOK || !ok {
		return []SKUConfidence{fam}
	}
	return []SKUConfidence{fam, all}
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
