package plan

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPressureRetryBlock(t *testing.T) {
	p := mustLoad(t, minimal+`
pressure {
  restart {}
  retry {
    max_retries = 3
    budget      = 0.1
    backoff     = "50ms"
    max_backoff = "1s"
    jitter      = 0.5
  }
}`, LoadOptions{})
	r := p.Pressure.Retry
	if r == nil {
		t.Fatal("no retry policy")
	}
	want := PressureRetry{MaxRetries: 3, Budget: 0.1, Backoff: 50 * time.Millisecond, MaxBackoff: time.Second, Jitter: 0.5}
	if *r != want {
		t.Errorf("retry %+v, want %+v", *r, want)
	}

	p = mustLoad(t, minimal+`pressure {
  burst {}
  retry {}
}`, LoadOptions{})
	want = PressureRetry{MaxRetries: 2, Budget: 0.2, Backoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second, Jitter: 1}
	if *p.Pressure.Retry != want {
		t.Errorf("defaults %+v, want %+v", *p.Pressure.Retry, want)
	}
}

func TestPressureRetryBlockRefusesBadValues(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`budget = -0.5`, "must be at least 0 and at most 100"},
		{`backoff = "0s"`, "must be at least 1ms"},
		{`backoff = "1s"
    max_backoff = "100ms"`, "must be at least the backoff"},
		{`jitter = 2`, "between 0 and 1"},
		{`max_retries = -1`, "max_retries"},
	} {
		_, err := loadString(t, minimal+"pressure {\n  burst {}\n  retry {\n    "+c.body+"\n  }\n}", LoadOptions{})
		if err == nil {
			t.Errorf("%s: accepted", c.body)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", c.body, err, c.want)
		}
	}
}

func TestPressureRetryWithoutBurstRestartOrShiftWarns(t *testing.T) {
	p := mustLoad(t, minimal+`pressure {
  ladder {}
  retry {}
}`, LoadOptions{})
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "Retry policy without a burst, restart or shift") }) {
		t.Errorf("warnings %q, want one about the retry policy", p.Warnings)
	}
	// A shift's clients retry too: no warning.
	p = mustLoad(t, minimal+`pressure {
  shift {
    from = { chat = 1 }
    to   = { chat = 1 }
  }
  retry {}
}`, LoadOptions{})
	if slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "Retry policy") }) {
		t.Errorf("warnings %q: the shift's clients use the retry policy", p.Warnings)
	}
}
