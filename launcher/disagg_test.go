package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests start `frontier sim serve` as the prefill and decode instances (real
// subprocesses, on virtual GPUs: this machine has none) and `frontier router` in front.

func pdSpecs(t *testing.T, decodeArgs ...string) Deployment {
	t.Helper()
	dir := t.TempDir()
	var d Deployment
	for i, role := range []string{RolePrefill, RoleDecode} {
		s := simAsVLLM(t, "meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", 4096)
		s.LogPath = filepath.Join(dir, role+".log")
		if role == RoleDecode {
			s.Args = append(s.Args, decodeArgs...)
		}
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		s = WithKVTransfer(s, role, port)
		if i == 0 {
			d.Prefill = append(d.Prefill, s)
		} else {
			d.Decode = append(d.Decode, s)
		}
	}
	d.Router = RouterSpec{FrontierBinary: frontierBin, LogPath: filepath.Join(dir, "router.log")}
	return d
}

// TestDeploymentServesThroughTheRouterAndStopsEverything starts a 1p1d deployment, sends a
// request through the router, and stops it: the three process groups are gone.
func TestDeploymentServesThroughTheRouterAndStopsEverything(t *testing.T) {
	t.Parallel()
	needFrontier(t)
	eng, err := New(KindVLLM, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := pdSpecs(t)
	inst, err := StartDeployment(context.Background(), eng, d)
	if err != nil {
		t.Fatal(err)
	}
	pids := inst.(*deployment).Pids()
	if len(pids) != 3 {
		t.Fatalf("process groups %v, want three: prefill, decode, router", pids)
	}
	resp, err := http.Post(inst.URL()+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":"a b c d e f g h","max_tokens":5,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "[DONE]") {
		t.Errorf("through the router: %d %s", resp.StatusCode, body)
	}
	if got := MetricsURL(inst); !strings.HasPrefix(got, inst.(*deployment).urls(RoleDecode)[0]) {
		t.Errorf("MetricsURL = %s, want the decode instance's", got)
	}
	p := inst.Provenance()
	if p.Role != RoleRouter || len(p.Instances) != 2 || p.Instances[1].Role != RoleDecode || p.Instances[1].Capacity == nil {
		t.Errorf("provenance %+v", p)
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Errorf("Stop: %v", err)
	}
	for _, pid := range pids {
		assertNoProcesses(t, pid)
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// TestDeploymentFailsWithTheFailedInstancesClass: a decode instance that cannot load its
// weights fails the launch with weights_oom, naming the instance, and the prefill instance
// that started is stopped.
func TestDeploymentFailsWithTheFailedInstancesClass(t *testing.T) {
	t.Parallel()
	needFrontier(t)
	eng, err := New(KindVLLM, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := pdSpecs(t, "--fault-startup-oom")
	inst, err := StartDeployment(context.Background(), eng, d)
	var le *LaunchError
	if !errors.As(err, &le) || le.Class != FailWeightsOOM || !strings.HasPrefix(le.Message, "decode instance 0: ") {
		t.Fatalf("StartDeployment = %v, %v; want weights_oom naming decode instance 0", inst, err)
	}
	pid := simPID(t, d.Prefill[0].LogPath)
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the prefill instance (pid %d) is still running after the failed launch", pid)
	}
}

// TestDeploymentReportsAnInstanceThatDies: a decode instance that crashes after serving
// closes Exited, and Failure names it with its class.
func TestDeploymentReportsAnInstanceThatDies(t *testing.T) {
	t.Parallel()
	needFrontier(t)
	eng, err := New(KindVLLM, Options{})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := StartDeployment(context.Background(), eng, pdSpecs(t, "--fault-crash-after", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(context.Background())
	resp, err := http.Post(inst.URL()+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":"a b c","max_tokens":3}`))
	if err == nil {
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	select {
	case <-inst.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("Exited did not close after the decode instance crashed")
	}
	le := Failure(inst)
	if le == nil || le.Class != FailCrash || !strings.HasPrefix(le.Message, "decode instance 0: ") {
		t.Errorf("Failure = %v, want a crash of decode instance 0", le)
	}
}

// TestDeploymentFailureEndsTheOthersStart: a prefill instance out of memory at once ends the
// start of a decode instance that would hang until its startup timeout (60 s): the launch
// fails within seconds with the prefill's class, and the decode instance is stopped.
func TestDeploymentFailureEndsTheOthersStart(t *testing.T) {
	t.Parallel()
	needFrontier(t)
	eng, err := New(KindVLLM, Options{GracePeriod: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d := pdSpecs(t, "--fault-hang-startup")
	d.Decode[0].StartupTimeout = time.Minute
	d.Prefill[0].Args = append(d.Prefill[0].Args, "--fault-startup-oom", "--fault-slow-start", "1s")
	start := time.Now()
	inst, err := StartDeployment(context.Background(), eng, d)
	took := time.Since(start)
	var le *LaunchError
	if !errors.As(err, &le) || le.Class != FailWeightsOOM || !strings.HasPrefix(le.Message, "prefill instance 0: ") {
		t.Fatalf("StartDeployment = %v, %v; want weights_oom naming prefill instance 0", inst, err)
	}
	if took > 20*time.Second {
		t.Errorf("StartDeployment took %s after the prefill instance failed; want the decode instance's start ended at once, not at its startup timeout of 1m", took.Round(time.Second))
	}
	pid := simPID(t, d.Decode[0].LogPath)
	if alive(pid) {
		t.Errorf("the decode instance (pid %d) is still running after the failed launch returned", pid)
	}
}

// TestDeploymentSaysWhichProcessWasKilledAndHow: the router or an instance killed by SIGKILL
// while serving closes Exited, and Failure names the process, its pid and the signal.
func TestDeploymentSaysWhichProcessWasKilledAndHow(t *testing.T) {
	t.Parallel()
	needFrontier(t)
	eng, err := New(KindVLLM, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, victim := range []string{"router", "prefill"} {
		t.Run(victim, func(t *testing.T) {
			t.Parallel()
			inst, err := StartDeployment(context.Background(), eng, pdSpecs(t))
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Stop(context.Background())
			dep := inst.(*deployment)
			pid, want := dep.router.Pid(), "the router (pid %d) exited with signal KILL"
			if victim == "prefill" {
				pid, want = dep.instances[0].Instance.(*openAIInstance).Pid(), "prefill instance 0: the engine (pid %d) exited with signal KILL"
			}
			want = fmt.Sprintf(want, pid)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			select {
			case <-inst.Exited():
			case <-time.After(10 * time.Second):
				t.Fatalf("Exited did not close after the %s was killed", victim)
			}
			if le := Failure(inst); le == nil || le.Class != FailCrash || le.Message != want {
				t.Errorf("Failure = %v, want a crash saying %q", le, want)
			}
		})
	}
}
