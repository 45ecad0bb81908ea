package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/frontier-llm/frontier/record"
)

// pdRole is one role of a disaggregated trial: its instances and each one's
// tensor_parallel_size and GPUs.
type pdRole struct {
	name      string
	instances int
	tp, gpus  int
}

// pdDeployment is a disaggregated trial's roles, prefill first.
type pdDeployment struct {
	value string
	roles [2]pdRole
}

func (d pdDeployment) String() string { return d.value }

// disaggOf reads a trial's disaggregation from its configuration; false when it ran one
// engine instance.
func disaggOf(t *record.Trial) (pdDeployment, bool) {
	cfg := t.Config
	d := record.DisaggregationOf(cfg)
	if !d.Enabled() {
		return pdDeployment{}, false
	}
	return pdDeployment{value: d.String(), roles: [2]pdRole{
		{record.RolePrefill, d.Prefill, record.RoleTP(cfg, true), record.InstanceGPUs(cfg, true)},
		{record.RoleDecode, d.Decode, record.RoleTP(cfg, false), record.InstanceGPUs(cfg, false)},
	}}, true
}

// roleServeArgs is the `vllm serve` command of one instance of a role: as it was recorded,
// with the role's tensor_parallel_size and the NixlConnector with the role's kv_role, or as
// the launcher builds it when the trial recorded none.
func roleServeArgs(rec *record.Study, t *record.Trial, r pdRole, index int) ([]string, error) {
	c, err := trialCommand(rec, t, r.name, index)
	if err != nil {
		return nil, fmt.Errorf("export: trial %d, %s instance %d: %w", t.Number, r.name, index, err)
	}
	return c.argv(), nil
}

// The ports of the vllm-args export of a disaggregated trial on one host: the i-th prefill
// instance serves on prefillPort+i, the i-th decode instance on decodePort+i, the router on
// routerPort, and the k-th instance (prefill first) has the NIXL side channel
// sideChannelPort+k (5600 is VLLM_NIXL_SIDE_CHANNEL_PORT's default).
const (
	prefillPort     = 8100
	decodePort      = 8200
	routerPort      = 8000
	sideChannelPort = 5600
)

// exportArgsDisagg writes one command line per instance and the router's, to run on one
// host as they are: each instance with its own --port, its own NIXL side channel
// (VLLM_NIXL_SIDE_CHANNEL_PORT, on loopback as the trial had it) and its own GPUs
// (CUDA_VISIBLE_DEVICES, tensor x pipeline x data parallel size of them, none shared).
func exportArgsDisagg(w io.Writer, rec *record.Study, t *record.Trial, d pdDeployment) error {
	fmt.Fprintf(w, "# %s: a disaggregated deployment (%s) on one host of %d GPUs\n", trialNote(rec, t), d,
		d.roles[0].instances*d.roles[0].gpus+d.roles[1].instances*d.roles[1].gpus)
	var urls [2][]string
	gpu, side := 0, sideChannelPort
	for ri, r := range d.roles {
		fmt.Fprintf(w, "# %s: %d instance(s) of %d GPU(s) each\n", r.name, r.instances, r.gpus)
		for i := range r.instances {
			argv, err := roleServeArgs(rec, t, r, i)
			if err != nil {
				return err
			}
			port := prefillPort + i
			if ri == 1 {
				port = decodePort + i
			}
			ids := make([]string, r.gpus)
			for k := range ids {
				ids[k] = strconv.Itoa(gpu + k)
			}
			gpu += r.gpus
			env := []envVar{{Name: "CUDA_VISIBLE_DEVICES", Value: strings.Join(ids, ",")},
				{Name: "VLLM_NIXL_SIDE_CHANNEL_HOST", Value: "127.0.0.1"},
				{Name: "VLLM_NIXL_SIDE_CHANNEL_PORT", Value: strconv.Itoa(side)}}
			side++
			fmt.Fprintln(w, envShellLine(rec, env, append(argv, "--port", strconv.Itoa(port))))
			urls[ri] = append(urls[ri], "http://127.0.0.1:"+strconv.Itoa(port))
		}
	}
	if custom := customRouter(t); custom != nil {
		// The trial was measured behind the plan's own router (engine.router), which finds
		// the instances in its environment: the export runs that one, not frontier's.
		fmt.Fprintln(w, "# router: the plan's engine.router, as the trial measured it, in front of every instance")
		env := []envVar{{Name: "FRONTIER_ROUTER_HOST", Value: "127.0.0.1"}, {Name: "FRONTIER_ROUTER_PORT", Value: strconv.Itoa(routerPort)},
			{Name: "FRONTIER_PREFILL_URLS", Value: strings.Join(urls[0], " ")}, {Name: "FRONTIER_DECODE_URLS", Value: strings.Join(urls[1], " ")}}
		_, err := fmt.Fprintln(w, envShellLine(rec, env, custom))
		return err
	}
	fmt.Fprintln(w, "# router: in front of every instance")
	words := []string{"frontier", "router"}
	for _, u := range urls[0] {
		words = append(words, "--prefill", u)
	}
	for _, u := range urls[1] {
		words = append(words, "--decode", u)
	}
	_, err := fmt.Fprintln(w, shellLine(append(words, "--port", strconv.Itoa(routerPort))))
	return err
}

// customRouter is the recorded command of the router a disaggregated trial was measured
// behind when it is not frontier's own (the plan's engine.router); nil for frontier's router
// or a record without one.
func customRouter(t *record.Trial) []string {
	if t.Provenance == nil || t.Provenance.Launch.Role != record.RoleRouter {
		return nil
	}
	cmd := t.Provenance.Launch.Command
	if len(cmd) == 0 || (len(cmd) >= 2 && cmd[1] == "router") {
		return nil
	}
	return cmd
}

// routerImage is the router's image: frontier's, as the repository's Dockerfile builds it.
func routerImage(t *record.Trial) string {
	if t.Provenance != nil {
		if v := t.Provenance.FrontierVersion; v != "" && safeTag(v) {
			return "frontier:" + v + "-sim"
		}
	}
	return "frontier:latest-sim"
}

// exportK8sDisagg writes a Deployment (with its model cache and a Service) per role, and the
// router's Deployment and Service in front of them.
func exportK8sDisagg(w io.Writer, rec *record.Study, t *record.Trial, d pdDeployment) error {
	if custom := customRouter(t); custom != nil {
		return fmt.Errorf("trial %d was measured behind the plan's own router (%s), which has no image frontier knows: the k8s export deploys only frontier's router, a deployment other than the one measured; export --format vllm-args for the commands, and deploy that router yourself",
			t.Number, shellLine(custom))
	}
	base := dnsLabel("vllm-" + rec.Study)
	fmt.Fprintf(w, "# %s: a disaggregated deployment (%s) behind frontier's router\n", trialNote(rec, t), d)
	var svc [2]string
	for i, r := range d.roles {
		argv, err := roleServeArgs(rec, t, r, 0)
		if err != nil {
			return err
		}
		name := DNSLabel(base, 63-len(r.name)-1) + "-" + r.name
		svc[i] = name
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		// The decode instance reads the KV cache from the prefill pod that computed it, at
		// the pod's own address (the Service only reaches one of them).
		env := "            - name: VLLM_NIXL_SIDE_CHANNEL_HOST\n              valueFrom:\n                fieldRef:\n                  fieldPath: status.podIP\n" +
			"            - name: VLLM_NIXL_SIDE_CHANNEL_PORT\n              value: \"5600\"\n"
		ports := "            - name: nixl\n              containerPort: 5600\n"
		if err := writeK8sEngine(w, rec, t, k8sEngine{name: name, secretName: base + "-secrets", replicas: r.instances, argv: argv,
			gpus: r.gpus, extraEnv: env, extraPorts: ports}); err != nil {
			return err
		}
		writeK8sService(w, name)
	}
	router := DNSLabel(base, 63-len("-router")) + "-router"
	fmt.Fprintf(w, `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  labels:
    app.kubernetes.io/name: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: %[1]s
  template:
    metadata:
      labels:
        app.kubernetes.io/name: %[1]s
    spec:
      containers:
        - name: router
          image: %[2]s
          command: ["frontier", "router"]
          args: ["--host", "0.0.0.0", "--port", "8000", "--prefill", "http://%[3]s:8000", "--decode", "http://%[4]s:8000"]
          ports:
            - name: http
              containerPort: 8000
          resources:
            requests:
              cpu: "1"
              memory: 1Gi
          readinessProbe:
            httpGet:
              path: /health
              port: http
            periodSeconds: 10
            failureThreshold: 3
`, router, routerImage(t), svc[0], svc[1])
	writeK8sService(w, router)
	return nil
}

// writeK8sService writes a Service for the Deployment name's pods, port 8000.
func writeK8sService(w io.Writer, name string) {
	fmt.Fprintf(w, `---
apiVersion: v1
kind: Service
metadata:
  name: %[1]s
spec:
  selector:
    app.kubernetes.io/name: %[1]s
  ports:
    - name: http
      port: 8000
      targetPort: http
`, name)
}
