package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/frontier-llm/frontier/record"
)

// deploymentKnobs are the knobs that say how a trial was deployed, not vLLM flags.
var deploymentKnobs = map[string]bool{record.DisaggregationKnob: true, record.PrefillTPKnob: true, record.DecodeTPKnob: true}

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

// roleServeArgs is the `vllm serve` command of one role: the trial's, with the role's
// tensor_parallel_size and the NixlConnector's --kv-transfer-config.
func roleServeArgs(rec *record.Study, t *record.Trial, r pdRole) ([]string, error) {
	argv, err := ServeArgs(rec, t)
	if err != nil {
		return nil, err
	}
	if i := slices.Index(argv, "--tensor-parallel-size"); i >= 0 && i+1 < len(argv) {
		argv[i+1] = strconv.Itoa(r.tp)
	} else if r.tp > 1 {
		argv = append(argv, "--tensor-parallel-size", strconv.Itoa(r.tp))
	}
	return append(argv, "--kv-transfer-config", record.KVTransferConfig), nil
}

// exportArgsDisagg writes each role's command line and the router's.
func exportArgsDisagg(w io.Writer, rec *record.Study, t *record.Trial, d pdDeployment) error {
	fmt.Fprintf(w, "# %s: a disaggregated deployment (%s)\n", trialNote(rec, t), d)
	for i, r := range d.roles {
		argv, err := roleServeArgs(rec, t, r)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "# %s: %d instance(s) of %d GPU(s) each; give each its own port, and VLLM_NIXL_SIDE_CHANNEL_PORT when several share a host\n", r.name, r.instances, r.gpus)
		fmt.Fprintln(w, envShellLine(rec, append(argv, "--port", strconv.Itoa(8100+100*i))))
	}
	fmt.Fprintln(w, "# router: in front of every instance (repeat --prefill and --decode for each)")
	_, err := fmt.Fprintln(w, "frontier router --prefill http://127.0.0.1:8100 --decode http://127.0.0.1:8200 --port 8000")
	return err
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
	base := dnsLabel("vllm-" + rec.Study)
	fmt.Fprintf(w, "# %s: a disaggregated deployment (%s) behind frontier's router\n", trialNote(rec, t), d)
	var svc [2]string
	for i, r := range d.roles {
		argv, err := roleServeArgs(rec, t, r)
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
