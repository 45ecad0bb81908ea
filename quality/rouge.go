package quality

import "unicode"

// RougeTokens splits s into the tokens ROUGE-L compares: runs of non-space characters
// separated by whitespace, except that every CJK character (Han, Hiragana, Katakana, CJK
// punctuation and full-width forms) is a token of its own, since Chinese and Japanese are
// written without spaces. No lowercasing, stemming or punctuation removal is done.
func RougeTokens(s string) []string {
	var (
		toks []string
		cur  []rune
	)
	flush := func() {
		if len(cur) > 0 {
			toks = append(toks, string(cur))
			cur = cur[:0]
		}
	}
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			flush()
		case isCJK(r):
			flush()
			toks = append(toks, string(r))
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return toks
}

// isCJK reports whether r belongs to a script written without spaces between words.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) ||
		(r >= 0x3000 && r <= 0x303f) || // CJK symbols and punctuation
		(r >= 0x30a0 && r <= 0x30ff) || // Katakana, with the prolonged sound mark
		(r >= 0xff00 && r <= 0xffef) // half-width and full-width forms
}

// RougeL returns the sentence-level ROUGE-L F-measure of a candidate against a reference
// (Lin, 2004): with LCS the length of their longest common token subsequence,
// R = LCS/len(reference), P = LCS/len(candidate), F = (1+β²)RP/(R+β²P) with β = 1, the
// balanced F of ROUGE-1.5.5's default (alpha 0.5) and of Google's rouge-score. The score is 0
// when either side has no tokens.
func RougeL(candidate, reference string) float64 {
	c, r := RougeTokens(candidate), RougeTokens(reference)
	if len(c) == 0 || len(r) == 0 {
		return 0
	}
	lcs := lcsLen(c, r)
	if lcs == 0 {
		return 0
	}
	p := float64(lcs) / float64(len(c))
	rec := float64(lcs) / float64(len(r))
	return 2 * p * rec / (p + rec)
}

// lcsLen is the length of the longest common subsequence of a and b, in O(len(a)·len(b))
// time and O(len(b)) memory.
func lcsLen(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
