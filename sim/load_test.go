package sim

import (
	"strings"
	"testing"
	"time"
)

func TestLoadTimeFlag(t *testing.T) {
	a, err := ParseServeArgs([]string{"llama-3.1-8b", "--sku", "h100-sxm", "--load-time", "auto"})
	if err != nil {
		t.Fatal(err)
	}
	// Llama 3.1 8B in BF16 is about 14.96 GiB of weights: at 7 GB/s, about 2.3 s.
	if d := a.loadTime(14.96); d < 2200*time.Millisecond || d > 2400*time.Millisecond {
		t.Errorf("auto load time of 14.96 GiB = %v, want about 2.3s", d)
	}
	a, err = ParseServeArgs([]string{"llama-3.1-8b", "--sku", "h100-sxm", "--load-time=1.5s"})
	if err != nil || a.loadTime(100) != 1500*time.Millisecond {
		t.Errorf("--load-time=1.5s: %v, %v", a.loadTime(100), err)
	}
	a, _ = ParseServeArgs([]string{"llama-3.1-8b", "--sku", "h100-sxm"})
	if d := a.loadTime(100); d != 0 {
		t.Errorf("no --load-time: %v, want 0", d)
	}
	for _, bad := range []string{"-1s", "fast", ""} {
		_, err := ParseServeArgs([]string{"llama-3.1-8b", "--sku", "h100-sxm", "--load-time", bad})
		if err == nil || !strings.Contains(err.Error(), "--load-time") {
			t.Errorf("--load-time %q: %v, want an error naming the flag", bad, err)
		}
	}
}

// TestServerLoadTime checks that the server serves only once its load time has passed, and
// says how long loading took as vLLM does.
func TestServerLoadTime(t *testing.T) {
	began := time.Now()
	_, log, _ := startServer(t, "llama-3.1-8b", "--sku", "h100-sxm", "--load-time", "400ms")
	if took := time.Since(began); took < 400*time.Millisecond {
		t.Errorf("ready after %v, before the 400ms load time", took)
	}
	if !strings.Contains(log.String(), "Model loading took") || !strings.Contains(log.String(), "and 0.4") {
		t.Errorf("the log does not say loading took 0.4 s:\n%s", log)
	}
}
