package launcher

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/redact"
	"github.com/frontier-llm/frontier/vllm"
)

// kvTransferConfig is the --kv-transfer-config of an instance of role on vLLM line v (the
// current line when v is nil): the NixlConnector with the kv_role the line documents.
func kvTransferConfig(v *vllm.Version, role string) string {
	if v == nil {
		v, _ = vllm.Lookup(vllm.Current)
	}
	return v.KVTransferConfig(role == RolePrefill)
}

// Roles of a disaggregated deployment's processes, as provenance records them.
const (
	RolePrefill = record.RolePrefill
	RoleDecode  = record.RoleDecode
	RoleRouter  = record.RoleRouter
)

// Deployment is a prefill/decode disaggregated launch: every prefill and decode instance,
// each a Spec with its own GPUs and log, and the router in front of them.
type Deployment struct {
	Prefill, Decode []Spec
	Router          RouterSpec
}

// RouterSpec is the router of a Deployment.
type RouterSpec struct {
	// Command runs another router (such as llm-d's routing sidecar); empty means frontier's
	// own, `FRONTIER router --prefill URL... --decode URL... --host 127.0.0.1 --port PORT`.
	// Another router finds the addresses in its environment: FRONTIER_ROUTER_HOST,
	// FRONTIER_ROUTER_PORT, FRONTIER_PREFILL_URLS and FRONTIER_DECODE_URLS (space-separated
	// base URLs).
	Command []string
	// FrontierBinary is the frontier executable for the default router; empty means
	// os.Executable().
	FrontierBinary string
	Env            map[string]string
	LogPath        string
	StartupTimeout time.Duration // 0: one minute
	GracePeriod    time.Duration // 0: DefaultGracePeriod
	// Environ is the environment the router inherits before Env; nil means os.Environ().
	Environ []string
}

// WithKVTransfer is spec as one instance of a disaggregated deployment in role (RolePrefill
// or RoleDecode): vLLM's --kv-transfer-config for the NixlConnector, with the kv_role of the
// role on the line the command line is built for (kv_producer and kv_consumer from v0.28,
// kv_both before: vllm.Version.KVRole), and the connector's side channel on a port of its own
// on loopback (VLLM_NIXL_SIDE_CHANNEL_HOST and VLLM_NIXL_SIDE_CHANNEL_PORT), so that
// instances on one host do not collide on the default 5600.
func WithKVTransfer(spec Spec, role string, sidePort int) Spec {
	spec.Role = role
	env := maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	env["VLLM_NIXL_SIDE_CHANNEL_HOST"] = "127.0.0.1"
	env["VLLM_NIXL_SIDE_CHANNEL_PORT"] = strconv.Itoa(sidePort)
	spec.Env = env
	return spec
}

// StartDeployment starts every instance of d with eng, at once, then the router, and returns
// the deployment as one Instance whose URL is the router's. It is all-or-nothing: the first
// instance that fails ends the start of the others at once, everything started is stopped,
// and the error is that failure's *LaunchError (its message naming the instance: "prefill
// instance 0: ..."); so is a failure of the router.
func StartDeployment(ctx context.Context, eng Engine, d Deployment) (Instance, error) {
	if len(d.Prefill) == 0 || len(d.Decode) == 0 {
		return nil, &LaunchError{Class: FailInvalidArgs, Message: fmt.Sprintf("a disaggregated deployment needs prefill and decode instances (got %d and %d)", len(d.Prefill), len(d.Decode))}
	}
	type started struct {
		inst Instance
		err  error
	}
	specs := append(append([]Spec{}, d.Prefill...), d.Decode...)
	out := make([]started, len(specs))
	// The first instance that fails ends the others' start: their GPUs are not held for
	// their startup timeout by a deployment that cannot run.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
	)
	roleOf := func(i int) (string, int) {
		if i >= len(d.Prefill) {
			return RoleDecode, i - len(d.Prefill)
		}
		return RolePrefill, i
	}
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].inst, out[i].err = eng.Start(sctx, s)
			if out[i].err == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if first == nil {
				role, idx := roleOf(i)
				first = instanceError(role, idx, out[i].err)
				cancel()
			}
		}()
	}
	wg.Wait()
	dep := &deployment{}
	for i, o := range out {
		if o.err == nil {
			role, idx := roleOf(i)
			dep.instances = append(dep.instances, roleInstance{role: role, index: idx, Instance: o.inst})
		}
	}
	if first != nil {
		return nil, errors.Join(first, dep.stopAll(context.WithoutCancel(ctx)))
	}
	if err := dep.startRouter(ctx, d.Router); err != nil {
		return nil, errors.Join(err, dep.stopAll(context.WithoutCancel(ctx)))
	}
	return dep, nil
}

// instanceError names the instance in a launch failure, keeping its class.
func instanceError(role string, idx int, err error) error {
	var le *LaunchError
	if errors.As(err, &le) {
		c := *le
		c.Message = fmt.Sprintf("%s instance %d: %s", role, idx, le.Message)
		return &c
	}
	return fmt.Errorf("%s instance %d: %w", role, idx, err)
}

// roleInstance is one engine instance of a deployment.
type roleInstance struct {
	Instance
	role  string
	index int
}

// deployment is a running disaggregated deployment.
type deployment struct {
	instances []roleInstance // prefill instances first
	router    *Process
	url       string
	prov      Provenance
	exited    chan struct{}
	stopOnce  sync.Once
	stopErr   error
}

// urls are the base URLs of the instances of a role.
func (d *deployment) urls(role string) []string {
	var out []string
	for _, in := range d.instances {
		if in.role == role {
			out = append(out, in.URL())
		}
	}
	return out
}

func (d *deployment) startRouter(ctx context.Context, rs RouterSpec) error {
	port, err := FreePort()
	if err != nil {
		return &LaunchError{Class: FailOther, Err: err}
	}
	pre, dec := d.urls(RolePrefill), d.urls(RoleDecode)
	argv := rs.Command
	if len(argv) == 0 {
		bin := rs.FrontierBinary
		if bin == "" {
			if bin, err = os.Executable(); err != nil {
				return &LaunchError{Class: FailOther, Message: "find the frontier binary for the router", Err: err}
			}
		}
		argv = []string{bin, "router"}
		for _, u := range pre {
			argv = append(argv, "--prefill", u)
		}
		for _, u := range dec {
			argv = append(argv, "--decode", u)
		}
		argv = append(argv, "--host", "127.0.0.1", "--port", strconv.Itoa(port))
	}
	env := maps.Clone(rs.Env)
	if env == nil {
		env = map[string]string{}
	}
	env["FRONTIER_ROUTER_HOST"] = "127.0.0.1"
	env["FRONTIER_ROUTER_PORT"] = strconv.Itoa(port)
	env["FRONTIER_PREFILL_URLS"] = strings.Join(pre, " ")
	env["FRONTIER_DECODE_URLS"] = strings.Join(dec, " ")
	environ := rs.Environ
	if environ == nil {
		environ = os.Environ()
	}
	secrets := redact.Values(argv, env, environ, nil, nil)
	d.prov = Provenance{Engine: RoleRouter, Command: redact.Argv(argv, secrets), Env: redact.Env(env, nil), Host: launchHost(), Role: RoleRouter}
	p, err := StartProcess(ctx, ProcessConfig{Argv: argv, Env: envList(environ, env), LogPath: rs.LogPath,
		LogHeader: logHeader(d.prov, ""), GracePeriod: rs.GracePeriod, Redact: secrets})
	if err != nil {
		return &LaunchError{Class: FailOther, Message: "router: " + err.Error(), LogPath: rs.LogPath, Err: err}
	}
	d.router = p
	d.url = fmt.Sprintf("http://127.0.0.1:%d", port)
	timeout := rs.StartupTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	client := LoopbackClient()
	probe := func(ctx context.Context) error { return getOK(ctx, client, d.url+"/health", "", nil) }
	if err := WaitReady(ctx, p, timeout, probe); err != nil {
		msg := "router: " + err.Error()
		if last := lastMessage(strings.Split(p.LogTail(logTailBytes), "\n")); last != "" {
			msg += "; last log line: " + last
		}
		class := FailCrash
		if errors.Is(err, ErrStartupTimeout) {
			class = FailStartupTimeout
		}
		return &LaunchError{Class: class, Message: msg, LogPath: p.LogPath(), Err: err}
	}
	d.exited = make(chan struct{})
	go d.watch()
	return nil
}

// watch closes d.exited once any process of the deployment has exited.
func (d *deployment) watch() {
	cases := make([]<-chan struct{}, 0, len(d.instances)+1)
	cases = append(cases, d.router.Exited())
	for _, in := range d.instances {
		cases = append(cases, in.Exited())
	}
	one := make(chan struct{}, len(cases))
	for _, c := range cases {
		go func() { <-c; one <- struct{}{} }()
	}
	<-one
	close(d.exited)
}

// stopAll stops the router and every instance, at once.
func (d *deployment) stopAll(ctx context.Context) error {
	errs := make([]error, len(d.instances)+1)
	var wg sync.WaitGroup
	if d.router != nil {
		wg.Add(1)
		go func() { defer wg.Done(); errs[0] = d.router.Stop(ctx) }()
	}
	for i, in := range d.instances {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i+1] = in.Stop(ctx) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (d *deployment) URL() string                    { return d.url }
func (d *deployment) ServedModel() string            { return d.instances[len(d.instances)-1].ServedModel() }
func (d *deployment) RequestOptions() map[string]any { return nil }
func (d *deployment) Exited() <-chan struct{}        { return d.exited }

// Capacity is the decode instances' KV cache, where the running requests live: their tokens
// and concurrency summed.
func (d *deployment) Capacity() Capacity {
	var c Capacity
	for _, in := range d.instances {
		if in.role == RoleDecode {
			ic := in.Capacity()
			c.KVCacheTokens += ic.KVCacheTokens
			c.MaxConcurrency += ic.MaxConcurrency
		}
	}
	return c
}

// Provenance is the router's launch, with every instance's launch, role and capacity in
// Instances and every instance's GPUs.
func (d *deployment) Provenance() Provenance {
	p := d.prov
	p.Instances = nil
	for i, in := range d.instances {
		ip := in.Provenance()
		ip.Role, ip.Index = in.role, in.index
		c := in.Capacity()
		ip.Capacity = &c
		p.Instances = append(p.Instances, ip)
		p.GPUNames = append(p.GPUNames, ip.GPUNames...)
		p.GPUUUIDs = append(p.GPUUUIDs, ip.GPUUUIDs...)
		if i == 0 { // the engine the deployment runs, as a single instance's launch says
			p.Engine, p.EngineVersion, p.Driver = ip.Engine, ip.EngineVersion, ip.Driver
		}
	}
	return p
}

// APIKey is the key the instances enforce: the router forwards the client's.
func (d *deployment) APIKey() string { return APIKey(d.instances[0].Instance) }

// MetricsURL is where the deployment's engine metrics are read: the first decode instance's,
// which holds the running requests and their KV cache.
func (d *deployment) MetricsURL() string {
	return d.urls(RoleDecode)[0] + "/metrics"
}

// Stop stops the router and every instance. Safe to call more than once.
func (d *deployment) Stop(ctx context.Context) error {
	d.stopOnce.Do(func() { d.stopErr = d.stopAll(ctx) })
	return d.stopErr
}

// Failure says which process of the deployment exited on its own and why: an instance's
// class and message, or the router's crash; nil while all run and after Stop.
func (d *deployment) Failure() *LaunchError {
	for _, in := range d.instances {
		if le := Failure(in.Instance); le != nil {
			return instanceError(in.role, in.index, le).(*LaunchError)
		}
	}
	select {
	case <-d.router.Exited():
		if !d.router.Stopped() {
			return diedFailure("the router", d.router, func(log string) Classification {
				msg := "router exited"
				if last := lastMessage(strings.Split(log, "\n")); last != "" {
					msg += ": " + last
				}
				return Classification{Class: FailCrash, Message: msg}
			})
		}
	default:
	}
	return nil
}

// LogError is the first failure to write any of the deployment's logs, or nil.
func (d *deployment) LogError() error {
	if err := d.router.LogError(); err != nil {
		return err
	}
	for _, in := range d.instances {
		if err := LogError(in.Instance); err != nil {
			return err
		}
	}
	return nil
}

// Pids are the process groups of the deployment: every instance's, then the router's.
func (d *deployment) Pids() []int {
	var out []int
	for _, in := range d.instances {
		if p, ok := in.Instance.(interface{ Pid() int }); ok {
			out = append(out, p.Pid())
		}
	}
	return append(out, d.router.Pid())
}

// MetricsURL is where inst's engine metrics are: a deployment's first decode instance's
// /metrics, else inst's own.
func MetricsURL(inst Instance) string {
	if m, ok := inst.(interface{ MetricsURL() string }); ok {
		return m.MetricsURL()
	}
	return inst.URL() + "/metrics"
}

var _ Instance = (*deployment)(nil)
