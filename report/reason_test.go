package report

import "testing"

func TestReasonKindGroupsNumbersWhateverTheirNotation(t *testing.T) {
	t.Parallel()
	tests := []struct{ reason, want string }{
		{"chat: ttft_p99_ms 5728 > 1000", "chat: ttft_p99_ms N > N"},
		{"chat: ttft_p99_ms 1.921e+04 > 1000", "chat: ttft_p99_ms N > N"},
		{"chat: ttft_p99_ms 3.5E-02 > 0.01", "chat: ttft_p99_ms N > N"},
		{"", "no reason recorded"},
	}
	for _, tt := range tests {
		if got := reasonKind(tt.reason); got != tt.want {
			t.Errorf("reasonKind(%q) = %q, want %q", tt.reason, got, tt.want)
		}
	}
}
