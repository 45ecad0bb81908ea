package report

import (
	"fmt"
	"strconv"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// deploymentLines describe a disaggregated trial: GPUs per role, the share of the time to
// first token that the KV transfer takes, and each instance's engine state as it reported it
// at startup; false for a trial of one engine instance.
func deploymentLines(t *record.Trial, sim bool) ([]string, table, bool) {
	d, ok := disaggOf(t)
	if !ok {
		return nil, table{}, false
	}
	pre, dec := d.roles[0], d.roles[1]
	lines := []string{fmt.Sprintf("Deployment: %s, prefill and decode disaggregated behind a router: %d prefill instance(s) of %d GPU(s) and %d decode instance(s) of %d GPU(s), %d GPUs in all. Export each role's command with frontier export --format vllm-args, or Kubernetes Deployments with --format k8s.",
		d, pre.instances, pre.gpus, dec.instances, dec.gpus, pre.instances*pre.gpus+dec.instances*dec.gpus)}
	if t.Total != nil {
		if x, ok := t.Total.Metrics[workload.KVTransferMeanMs]; ok {
			lines = append(lines, fmt.Sprintf("KV transfer from the prefill to the decode instance: %s ms per request on average, %s%% of the mean time to first token.",
				marked(x, sim), marked(100*t.Total.Metrics[workload.KVTransferTTFTShare], sim)))
		}
	}
	tb := table{Header: []string{"instance", "GPUs", "KV cache tokens", "max concurrency", "engine"}}
	if t.Provenance != nil {
		for _, in := range t.Provenance.Launch.Instances {
			kv, conc := "", ""
			if in.Capacity != nil {
				kv, conc = strconv.Itoa(in.Capacity.KVCacheTokens), strconv.FormatFloat(in.Capacity.MaxConcurrency, 'f', 2, 64)
			}
			tb.Rows = append(tb.Rows, []string{fmt.Sprintf("%s %d", in.Role, in.Index), strconv.Itoa(len(in.GPUNames)), kv, conc,
				printable(in.Engine + " " + in.EngineVersion)})
		}
	}
	return lines, tb, true
}
