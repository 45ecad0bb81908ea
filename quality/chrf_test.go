package quality

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// approx compares scores to 1e-12: the hand-worked fractions below are exact, and the
// sacrebleu values are printed to 15 or more significant digits.
var approx = cmpopts.EquateApprox(0, 1e-12)

func TestChrFStatisticsMatchSacrebleuCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		hyp, ref string
		want     ChrFStats
	}{
		{
			// "thecat" against "acat" (spaces removed). Orders 5 and 6: the reference has no
			// n-gram, so sacrebleu counts no hypothesis n-gram either ("Don't count hits if no
			// reference exists for that n-gram").
			name: "english with orders the reference lacks",
			hyp:  "the cat", ref: "a cat",
			want: ChrFStats{{6, 4, 3}, {5, 3, 2}, {4, 2, 1}, {3, 1, 0}, {0, 0, 0}, {0, 0, 0}},
		},
		{
			name: "japanese",
			hyp:  "山田さんへ", ref: "山田様へ",
			want: ChrFStats{{5, 4, 3}, {4, 3, 1}, {3, 2, 0}, {2, 1, 0}, {0, 0, 0}, {0, 0, 0}},
		},
		{
			// Python's str.split() whitespace: tab, newline, ideographic space U+3000 and
			// the unit separator U+001F are all removed.
			name: "every kind of whitespace removed",
			hyp:  "a\tb\nc\u3000d\u001fe", ref: "abcde",
			want: ChrFStats{{5, 5, 5}, {4, 4, 4}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0}},
		},
		{
			// Counts are clipped: "aaa" has three "a" but the reference only one.
			name: "clipped matches",
			hyp:  "aaa", ref: "ab",
			want: ChrFStats{{3, 2, 1}, {2, 1, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
		},
		{
			name: "empty hypothesis",
			hyp:  "", ref: "ab",
			want: ChrFStats{{0, 2, 0}, {0, 1, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, ChrFStatistics(tt.hyp, tt.ref)); diff != "" {
				t.Errorf("ChrFStatistics(%q, %q) (-want +got):\n%s", tt.hyp, tt.ref, diff)
			}
		})
	}
}

func TestChrFSentenceScoresMatchHandComputation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		hyp, ref string
		want     float64
	}{
		{
			// hyp "thecat", ref "acat". Orders with both sides non-empty: 1..4.
			//   n=1: P=3/6, R=3/4   n=2: P=2/5, R=2/3   n=3: P=1/4, R=1/2   n=4: P=0, R=0
			//   avgP = (1/2+2/5+1/4+0)/4 = 23/80;  avgR = (3/4+2/3+1/2+0)/4 = 23/48
			//   chrF2 = 5·avgP·avgR / (4·avgP + avgR) = 115/272
			name: "english worked by hand",
			hyp:  "the cat", ref: "a cat",
			want: 115.0 / 272,
		},
		{
			// ref 東京都, hyp 東京.
			//   n=1: P=2/2, R=2/3   n=2: P=1/1, R=1/2   n=3: hyp has no trigram: not effective
			//   avgP = 1;  avgR = (2/3+1/2)/2 = 7/12;  chrF2 = 5·(7/12) / (4 + 7/12) = 7/11
			name: "japanese worked by hand, short hypothesis",
			hyp:  "東京", ref: "東京都",
			want: 7.0 / 11,
		},
		{
			// ref 山田様へ, hyp 山田さんへ (see the statistics test).
			//   n=1: 3/5, 3/4   n=2: 1/4, 1/3   n=3: 0, 0   n=4: 0, 0   (4 effective orders)
			//   avgP = (3/5+1/4)/4 = 17/80;  avgR = (3/4+1/3)/4 = 13/48
			//   chrF2 = 5·(17/80)(13/48) / (4·17/80 + 13/48) = 1105/4304
			name: "japanese worked by hand, honorific changed",
			hyp:  "山田さんへ", ref: "山田様へ",
			want: 1105.0 / 4304,
		},
		{
			// The example of sacrebleu's CHRF documentation (as quoted by the Hugging Face
			// chrf metric card): 61.576379378113785 on sacrebleu's 0..100 scale.
			name: "sacrebleu documentation example",
			hyp:  "The relationship between Obama and Netanyahu is not exactly friendly.",
			ref:  "The ties between Obama and Netanyahu are not particularly friendly.",
			want: 0.61576379378113785,
		},
		{name: "identical", hyp: "同じ答え", ref: "同じ答え", want: 1},
		{name: "nothing in common", hyp: "xyz", ref: "abc", want: 0},
		{name: "empty hypothesis", hyp: "", ref: "abc", want: 0},
		{name: "both empty", hyp: " ", ref: "", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, ChrF(tt.hyp, tt.ref), approx); diff != "" {
				t.Errorf("ChrF(%q, %q) (-want +got):\n%s", tt.hyp, tt.ref, diff)
			}
		})
	}
}

func TestCorpusChrFSumsStatisticsBeforeScoring(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		hyps, refs []string
		want       float64
	}{
		{
			// Sums of [hyp, ref, match] by order:
			//   n=1: 6+3=9, 4+5=9, 3+3=6      n=2: 5+2=7, 3+4=7, 2+2=4
			//   n=3: 4+1=5, 2+3=5, 1+1=2      n=4: 3+0=3, 1+2=3, 0
			//   n=5: 0+0 (the 2 hypothesis 5-grams of "thecat" are not counted: its reference
			//        has none), 0+1: not effective.   n=6: nothing.
			//   avgP = avgR = (6/9 + 4/7 + 2/5 + 0)/4 = 43/105, so chrF2 = 43/105.
			// Counting the 5-grams of "thecat" would make order 5 effective with P=R=0 and give
			// (172/105)/5 instead.
			name: "english, orders the reference lacks are not counted",
			hyps: []string{"the cat", "dog"}, refs: []string{"a cat", "dogs!"},
			want: 43.0 / 105,
		},
		{
			// 東京/東京都 and 山田さんへ/山田様へ:
			//   n=1: 2+5=7, 3+4=7, 2+3=5      n=2: 1+4=5, 2+3=5, 1+1=2
			//   n=3: 0+3=3, 1+2=3, 0          n=4: 0+2=2, 0+1=1, 0
			//   avgP = (5/7 + 2/5 + 0 + 0)/4 = 39/140 = avgR, so chrF2 = 39/140, far from the
			//   mean of the sentence scores ((7/11 + 1105/4304)/2 ≈ 0.447).
			name: "japanese",
			hyps: []string{"東京", "山田さんへ"}, refs: []string{"東京都", "山田様へ"},
			want: 39.0 / 140,
		},
		{
			// sacrebleu's documented corpus example: 84.64214891738334.
			name: "sacrebleu documentation corpus example",
			hyps: []string{"The relationship between cats and dogs is not exactly friendly.",
				"a good bookshop is just a genteel black hole that knows how to read."},
			refs: []string{"The relationship between dogs and cats is not exactly friendly.",
				"A good bookshop is just a genteel Black Hole that knows how to read."},
			want: 0.8464214891738334,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, sentences := CorpusChrF(tt.hyps, tt.refs)
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("CorpusChrF corpus score (-want +got):\n%s", diff)
			}
			want := make([]float64, len(tt.hyps))
			for i := range tt.hyps {
				want[i] = ChrF(tt.hyps[i], tt.refs[i])
			}
			if diff := cmp.Diff(want, sentences, approx); diff != "" {
				t.Errorf("CorpusChrF sentence scores (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChrFScoreIsWithinZeroAndOne(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{{"a", "aaaaaaa"}, {"aaaaaaa", "a"}, {"ab ab ab", "ba"}} {
		if s := ChrF(pair[0], pair[1]); s < 0 || s > 1 || math.IsNaN(s) {
			t.Errorf("ChrF(%q, %q) = %v, want a value in 0..1", pair[0], pair[1], s)
		}
	}
}

// TestChrFAgreesWithSacrebleuOnGeneratedPairs compares with values computed by sacrebleu
// itself (testdata/chrf_sacrebleu.json; the generator line names the version and settings):
// English, Japanese and mixed text with tabs, newlines, ideographic and no-break spaces,
// information separators, emoji and flags (two code points), empty sides, and hypotheses
// that are edited references.
func TestChrFAgreesWithSacrebleuOnGeneratedPairs(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/chrf_sacrebleu.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Pairs []struct {
			Hyp, Ref string
			Sentence float64
		}
		Corpus float64
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	var hyps, refs []string
	for i, p := range golden.Pairs {
		hyps, refs = append(hyps, p.Hyp), append(refs, p.Ref)
		if diff := cmp.Diff(p.Sentence/100, ChrF(p.Hyp, p.Ref), approx); diff != "" {
			t.Errorf("pair %d: ChrF(%q, %q) (-sacrebleu +got):\n%s", i, p.Hyp, p.Ref, diff)
		}
	}
	corpus, _ := CorpusChrF(hyps, refs)
	if diff := cmp.Diff(golden.Corpus/100, corpus, approx); diff != "" {
		t.Errorf("corpus chrF of %d pairs (-sacrebleu +got):\n%s", len(hyps), diff)
	}
}
