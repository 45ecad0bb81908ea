package sim

import (
	"strings"
	"testing"
)

// TestServerSaysWhichCheckpointItAssumes checks that sim serve with --quantization awq on a
// catalog architecture starts, and logs that it serves the architecture's AWQ checkpoint.
func TestServerSaysWhichCheckpointItAssumes(t *testing.T) {
	t.Parallel()
	_, log, _ := startServer(t, "llama-3.1-8b", "--sku", "h100-sxm", "--max-model-len", "8192", "--quantization", "awq")
	want := "--quantization awq needs a pre-quantised checkpoint: serving llama-3.1-8b quantised with awq"
	if !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, log)
	}
}
