package pressure

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/launcher"
	"github.com/frontier-llm/frontier/launcher/ollamatest"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/testmodel"
)

// ollamaPlan is a study of the real Ollama engine on the CPU with a small generated model:
// short requests, one thread, two parallel slots; a two-step ladder and a restart.
const ollamaPlan = `
study "pressure-ollama" {
  trials = 1
  seed   = 1
}

model {
  name          = "tiny"
  gguf          = %q
  max_model_len = 256
}

engine "ollama" {
  startup_timeout = "1m"
}

hardware {
  gpus = 0
}

knob "num_parallel" { values = [2] }
knob "num_thread" { values = [1] }

workload "short" {
  endpoint      = "completions"
  requests      = 6
  input_tokens  = fixed(8)
  output_tokens = fixed(8)
  arrival       = poisson(2)
  timeout       = "30s"
  slo {
    ttft_p99 = "5s"
  }
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}

pressure {
  budget = "40s"
  ladder {
    start     = 1
    factor    = 2
    past      = 0
    refine    = 0
    duration  = "0s"
    max_steps = 2
    mix       = false
  }
  restart {
    base   = 0.5
    before = "1s"
    after  = "8s"
  }
}
`

// TestOllamaLadderAndRestart runs a small ladder and a restart on the real Ollama engine:
// frontier starts ollama serve with the generated model, steps the rate, kills the whole
// process group under load, starts it again on the same port and records the series.
func TestOllamaLadderAndRestart(t *testing.T) {
	bin := ollamatest.Binary(t, "..")
	t.Setenv(launcher.OllamaBinaryEnv, bin)
	dir := t.TempDir()
	gguf := filepath.Join(dir, "tiny.gguf")
	if err := testmodel.WriteFile(gguf, testmodel.Config{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "plan.hcl")
	if err := os.WriteFile(path, fmt.Appendf(nil, ollamaPlan, gguf), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := plan.Load(path, plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := plan.Config{"num_parallel": int64(2), "num_thread": int64(1)}
	s, err := Launch(ctx, p, cfg, LaunchOptions{LogPath: filepath.Join(dir, "ollama.log"), WorkDir: filepath.Join(dir, "work"), GracePeriod: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		if err := s.Close(sctx); err != nil {
			t.Logf("stop: %v", err)
		}
	}()
	before := s.inst.(pider).Pid()
	started := time.Now()
	got, err := Run(ctx, s, p.Workloads, p.Pressure, Options{Seed: 1, Trial: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("experiments took %v; errors %v", time.Since(started).Round(time.Second), got.Errors)
	if got.Engine != plan.EngineOllama || got.Simulated {
		t.Errorf("engine %q simulated=%v, want the real ollama", got.Engine, got.Simulated)
	}
	if len(got.Errors) > 0 {
		t.Errorf("experiments failed: %v", got.Errors)
	}

	if len(got.Ladders) != 1 {
		t.Fatalf("ladders %+v", got.Ladders)
	}
	l := got.Ladders[0]
	if len(l.Steps) == 0 || len(l.Steps) > 2 {
		t.Fatalf("%d ladder steps, want 1 or 2", len(l.Steps))
	}
	for i, st := range l.Steps {
		t.Logf("step %d: %.3g req/s, met %v, %v", i, st.Rate, st.MetSLO, st.Metrics)
		if st.Rate <= 0 || st.Seconds <= 0 || st.Metrics["completed"] <= 0 {
			t.Errorf("step %d measured nothing: rate %.3g, %.3g s, metrics %v", i, st.Rate, st.Seconds, st.Metrics)
		}
		if i > 0 && st.Rate <= l.Steps[i-1].Rate {
			t.Errorf("step %d: rate %.3g after %.3g, want the ladder to climb", i, st.Rate, l.Steps[i-1].Rate)
		}
	}

	r := got.Restart
	if r == nil {
		t.Fatal("no restart recorded")
	}
	t.Logf("restart: ready %.2f s after the kill; client saw %v; classes %+v", r.ReadyS, r.ClientSaw, r.Classes)
	if r.ReadyS <= 0 {
		t.Errorf("time to ready %.3g s, want above zero", r.ReadyS)
	}
	if len(r.Events) != 2 || r.Events[0].Name != "kill" || r.Events[1].Name != "ready" || r.Events[1].T <= r.Events[0].T {
		t.Errorf("events %+v, want kill then ready after it", r.Events)
	}
	if len(r.Classes) != 1 || len(r.Requests) != r.Classes[0].Sent || r.Classes[0].Sent == 0 {
		t.Fatalf("%d request timestamps, classes %+v", len(r.Requests), r.Classes)
	}
	if len(r.Timeline) < 4 {
		t.Errorf("timeline of %d points over a %v restart experiment", len(r.Timeline), 9*time.Second)
	}
	completedAfterReady := 0
	for _, q := range r.Requests {
		if q.Err == "" && q.Sent > r.Events[1].T {
			completedAfterReady++
		}
	}
	if completedAfterReady == 0 {
		t.Error("no request sent after the engine was ready again completed")
	}
	if after := s.inst.(pider).Pid(); after == before || processAlive(before) {
		t.Errorf("the engine was not replaced: pid %d before, %d after, old alive %v", before, after, processAlive(before))
	}
}
