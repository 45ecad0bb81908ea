package quality

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRougeTokensSplitsWordsAndCJKCharacters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{name: "english", in: "the cat  sat\non the mat.", want: []string{"the", "cat", "sat", "on", "the", "mat."}},
		{name: "japanese", in: "東京に住む。", want: []string{"東", "京", "に", "住", "む", "。"}},
		{name: "katakana with the prolonged sound mark", in: "コーヒー", want: []string{"コ", "ー", "ヒ", "ー"}},
		{name: "mixed", in: "田中様の注文A-1043を確認", want: []string{"田", "中", "様", "の", "注", "文", "A-1043", "を", "確", "認"}},
		{name: "ideographic space separates", in: "はい\u3000OK", want: []string{"は", "い", "OK"}},
		{name: "empty", in: " \t", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, RougeTokens(tt.in)); diff != "" {
				t.Errorf("RougeTokens(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestRougeLMatchesLinDefinition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                 string
		candidate, reference string
		want                 float64
	}{
		{
			// Lin (2004), section 3.1: reference "police killed the gunman"; candidate S2 "police
			// kill the gunman" has LCS "police the gunman" = 3, so R = P = 3/4 and F = 3/4.
			name:      "Lin 2004 S2",
			candidate: "police kill the gunman", reference: "police killed the gunman",
			want: 3.0 / 4,
		},
		{
			// Candidate S3 "the gunman kill police": LCS "the gunman" = 2, F = 2/4.
			name:      "Lin 2004 S3",
			candidate: "the gunman kill police", reference: "police killed the gunman",
			want: 2.0 / 4,
		},
		{
			// Different lengths: LCS "the cat on the mat" = 5 of 7 candidate tokens and 6
			// reference tokens. P = 5/7, R = 5/6, F = 2PR/(P+R) = (50/42)/(65/42) = 10/13.
			name:      "english, different lengths",
			candidate: "the cat was lying on the mat", reference: "the cat sat on the mat",
			want: 10.0 / 13,
		},
		{
			// Tokens are characters: 東京に住んでいる (8) against 東京都に住む (6). LCS 東京に住 = 4.
			// P = 4/8, R = 4/6, F = 2·(1/2)(2/3) / (1/2 + 2/3) = 4/7.
			name:      "japanese",
			candidate: "東京に住んでいる", reference: "東京都に住む",
			want: 4.0 / 7,
		},
		{
			// 田,中,様,は,A-1043,を,確,認 against 田,中,様,の,注,文,A-1043,を,確,認:
			// LCS 田中様 A-1043 を確認 = 7; P = 7/8, R = 7/10, F = 2·(49/80)/(63/40) = 7/9.
			name:      "japanese with a latin token",
			candidate: "田中様はA-1043を確認", reference: "田中様の注文A-1043を確認",
			want: 7.0 / 9,
		},
		{name: "identical", candidate: "a b c", reference: "a b c", want: 1},
		{name: "nothing in common", candidate: "x y", reference: "a b", want: 0},
		{name: "empty candidate", candidate: "", reference: "a b", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, RougeL(tt.candidate, tt.reference), approx); diff != "" {
				t.Errorf("RougeL(%q, %q) (-want +got):\n%s", tt.candidate, tt.reference, diff)
			}
		})
	}
}
