package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/workload"
)

func TestWriteMeasurementTable(t *testing.T) {
	t.Parallel()
	chat := &workload.Result{Metrics: map[string]float64{workload.Completed: 10, workload.RequestThroughput: 2.5}}
	batch := &workload.Result{Metrics: map[string]float64{workload.Completed: 4, workload.RequestThroughput: 1}}
	tests := []struct {
		name    string
		m       *workload.Measurement
		order   []string
		want    []string // in this order
		notWant []string
	}{
		{
			name: "classes in the order given, then the total",
			m: &workload.Measurement{
				Workloads: map[string]*workload.Result{"chat": chat, "batch": batch},
				Total:     &workload.Result{Metrics: map[string]float64{workload.Completed: 14, workload.RequestThroughput: 3.5}, Errors: map[string]int{"timeout": 2, "http_500": 1}},
			},
			order: []string{"chat", "batch"},
			want:  []string{"CHAT", "BATCH", "TOTAL", "completed", "10", "4", "14", "3.50", "errors: http_500=1 timeout=2"},
		},
		{
			name: "one class without engine metrics: no total column",
			m: &workload.Measurement{
				Workloads: map[string]*workload.Result{"chat": chat},
				Total:     chat,
			},
			order:   []string{"chat"},
			want:    []string{"CHAT", "completed", "2.50"},
			notWant: []string{"TOTAL", "errors:"},
		},
		{
			name: "one class and the engine's metrics in the total: a total column",
			m: &workload.Measurement{
				Workloads: map[string]*workload.Result{"chat": chat},
				Total:     &workload.Result{Metrics: map[string]float64{workload.Completed: 10, workload.KVCacheUsageMax: 0.25}},
			},
			order: []string{"chat"},
			want:  []string{"CHAT", "TOTAL", "0.2500"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := WriteMeasurementTable(&b, tt.m, tt.order); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			at := 0
			for _, w := range tt.want {
				i := strings.Index(out[at:], w)
				if i < 0 {
					t.Fatalf("%q missing, or out of order, in:\n%s", w, out)
				}
				at += i
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("%q in:\n%s", w, out)
				}
			}
		})
	}
}

func TestFormatErrors(t *testing.T) {
	t.Parallel()
	if got, want := FormatErrors(map[string]int{"timeout": 3, "connect": 1}), "connect=1 timeout=3"; got != want {
		t.Errorf("FormatErrors = %q, want %q", got, want)
	}
	if got := FormatErrors(nil); got != "" {
		t.Errorf("FormatErrors(nil) = %q, want empty", got)
	}
}
