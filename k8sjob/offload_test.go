package k8sjob

import (
	"bytes"
	"testing"
)

// TestAWorkerRequestsItsLargestOffloadingBuffer: a worker's memory request and limit are the
// per-GPU amount plus the pinned host memory of the plan's largest KV offloading buffer on
// its largest number of data-parallel engine cores, each of which pins its own.
func TestAWorkerRequestsItsLargestOffloadingBuffer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		knobs string
		gpus  int
		want  int64 // GiB
	}{
		{`knob "kv_offloading_size" { values = [0, 16, 40.5] }
knob "data_parallel_size" { values = [1, 2] }`, 2, 2*memoryGiBPerGPU + 81},
		{`knob "kv_offloading_size" {
  min = 0
  max = 24
}`, 1, memoryGiBPerGPU + 24},
		{`knob "max_num_seqs" { values = [64, 128] }`, 1, memoryGiBPerGPU},
	} {
		p := vllmPlanWith(t, c.knobs)
		var buf bytes.Buffer
		if err := Write(&buf, p, Options{Workers: 2, Version: "0.1.0"}); err != nil {
			t.Fatal(err)
		}
		d := decode(t, buf.String())
		res := d.jobs[0].Spec.Template.Spec.Containers[0].Resources
		if got := res.Requests.Memory().Value() >> 30; got != c.want {
			t.Errorf("%s: memory request %s, want %dGi", c.knobs, res.Requests.Memory(), c.want)
		}
		if got := res.Limits.Memory().Value() >> 30; got != c.want {
			t.Errorf("%s: memory limit %s, want %dGi", c.knobs, res.Limits.Memory(), c.want)
		}
		if gpus := res.Limits["nvidia.com/gpu"]; gpus.Value() != int64(c.gpus) {
			t.Errorf("%s: %s GPUs, want %d", c.knobs, gpus.String(), c.gpus)
		}
	}
}
