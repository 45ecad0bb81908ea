package quality

import "unicode"

// chrF parameters: sacrebleu's defaults (CHRF(char_order=6, word_order=0, beta=2,
// lowercase=False, whitespace=False, eps_smoothing=False)).
const (
	chrfOrder = 6
	chrfBeta  = 2
)

// ChrFStats are the character n-gram statistics of one hypothesis against one reference,
// or their sums over a corpus: for each order n = 1..6, the hypothesis n-grams, the reference
// n-grams and the matched n-grams, as sacrebleu counts them.
type ChrFStats [chrfOrder][3]int

// Add adds o to s (corpus statistics are sums of sentence statistics).
func (s *ChrFStats) Add(o ChrFStats) {
	for n := range s {
		for k := range s[n] {
			s[n][k] += o[n][k]
		}
	}
}

// ChrFStatistics returns the statistics of hyp against ref. As in sacrebleu, whitespace is
// removed before n-grams are taken (Python's str.split() whitespace), n-grams are of
// Unicode code points, matches are clipped counts, and an order for which the reference has
// no n-gram counts no hypothesis n-grams either.
func ChrFStatistics(hyp, ref string) ChrFStats {
	h, r := chrfChars(hyp), chrfChars(ref)
	var s ChrFStats
	for n := 1; n <= chrfOrder; n++ {
		hc, rc := charNgrams(h, n), charNgrams(r, n)
		refTotal := 0
		for _, c := range rc {
			refTotal += c
		}
		hypTotal, match := 0, 0
		for g, c := range hc {
			hypTotal += c
			match += min(c, rc[g])
		}
		if len(rc) == 0 {
			// sacrebleu: "Don't count hits if no reference exists for that n-gram".
			hypTotal = 0
		}
		s[n-1] = [3]int{hypTotal, refTotal, match}
	}
	return s
}

// Score returns the chrF score of the statistics on a 0..1 scale (sacrebleu's score / 100).
// Precision and recall are averaged over the effective orders, those where both the
// hypothesis and the reference have n-grams; the F-beta of the two averages is the score.
// With no effective order the score is 0.
func (s ChrFStats) Score() float64 {
	var avgP, avgR float64
	effective := 0
	for _, st := range s {
		hyp, ref, match := st[0], st[1], st[2]
		if hyp > 0 && ref > 0 {
			avgP += float64(match) / float64(hyp)
			avgR += float64(match) / float64(ref)
			effective++
		}
	}
	if effective == 0 {
		return 0
	}
	avgP /= float64(effective)
	avgR /= float64(effective)
	if avgP+avgR == 0 {
		return 0
	}
	const f = chrfBeta * chrfBeta
	return (1 + f) * avgP * avgR / (f*avgP + avgR)
}

// ChrF returns the sentence-level chrF of hyp against ref, on 0..1.
func ChrF(hyp, ref string) float64 {
	return ChrFStatistics(hyp, ref).Score()
}

// CorpusChrF returns the corpus-level chrF of hyps against refs (statistics summed over the
// pairs, then scored) and each pair's sentence-level chrF. hyps and refs have the same length.
func CorpusChrF(hyps, refs []string) (corpus float64, sentences []float64) {
	var total ChrFStats
	sentences = make([]float64, len(hyps))
	for i := range hyps {
		s := ChrFStatistics(hyps[i], refs[i])
		total.Add(s)
		sentences[i] = s.Score()
	}
	return total.Score(), sentences
}

// chrfChars returns the code points of s with whitespace removed, as Python's
// "".join(s.split()) does.
func chrfChars(s string) []rune {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if !isPythonSpace(r) {
			out = append(out, r)
		}
	}
	return out
}

// isPythonSpace reports whether Python's str.split() treats r as whitespace: Go's
// unicode.IsSpace plus the information separators U+001C..U+001F.
func isPythonSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// charNgrams counts the n-grams of order n in s.
func charNgrams(s []rune, n int) map[string]int {
	if len(s) < n {
		return nil
	}
	m := make(map[string]int, len(s)-n+1)
	for i := 0; i+n <= len(s); i++ {
		m[string(s[i:i+n])]++
	}
	return m
}
