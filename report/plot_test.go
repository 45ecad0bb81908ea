package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAxes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		a         axis
		wantTicks []string
		wantPx    [2]float64 // pixel of the first and last tick
	}{
		{"linear with round steps", newAxis(3, 97, 0, 100), []string{"0", "20", "40", "60", "80", "100"}, [2]float64{0, 100}},
		{"linear fraction", newAxis(0.81, 0.95, 0, 100), []string{"0.80", "0.85", "0.90", "0.95"}, [2]float64{0, 100}},
		{"one value widens the range", newAxis(5, 5, 0, 100), []string{"4.0", "4.5", "5.0", "5.5", "6.0"}, [2]float64{0, 100}},
		{"log from 40 to 9000", newLogAxis(40, 9000, 0, 100), []string{"10", "20", "50", "100", "200", "500", "1000", "2000", "5000", "10000"}, [2]float64{0, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ticks := tc.a.tickList()
			var labels []string
			for _, tk := range ticks {
				labels = append(labels, tk.Label)
			}
			if diff := cmp.Diff(tc.wantTicks, labels); diff != "" {
				t.Errorf("tick labels (-want +got):\n%s", diff)
			}
			if got := [2]float64{ticks[0].Pos, ticks[len(ticks)-1].Pos}; got != tc.wantPx {
				t.Errorf("first and last tick at %v px, want %v", got, tc.wantPx)
			}
		})
	}
}
