package sim

import (
	"fmt"
	"time"
)

// LoadBandwidthGBps is the rate, in GB/s (10^9 bytes per second), at which `--load-time
// auto` reads a model's weights: the sequential read rate of one PCIe 4.0 x4 NVMe drive
// (Samsung 990 PRO, 7,450 MB/s by its data sheet; the U.2 drives of an H100 server read at
// about the same rate). A checkpoint already in the page cache loads faster, one on a
// network file system slower; vLLM's "Model loading took ... seconds" line shows the rate
// of a real host.
const LoadBandwidthGBps = 7.0

// LoadDuration is how long reading weightsGiB of weights takes at LoadBandwidthGBps.
func LoadDuration(weightsGiB float64) time.Duration {
	if weightsGiB <= 0 {
		return 0
	}
	secs := weightsGiB * (1 << 30) / (LoadBandwidthGBps * 1e9)
	return time.Duration(secs * float64(time.Second))
}

// setLoadTime reads --load-time: "auto" or a duration of at least 0.
func (a *ServeArgs) setLoadTime(v string) error {
	if v == "auto" {
		a.LoadTimeAuto, a.LoadTime = true, 0
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf(`--load-time %q: want "auto" or a duration of at least 0, such as 3s`, v)
	}
	a.LoadTime, a.LoadTimeAuto = d, false
	return nil
}

// loadTime is how long this start spends loading weights of weightsGiB.
func (a *ServeArgs) loadTime(weightsGiB float64) time.Duration {
	if a.LoadTimeAuto {
		return LoadDuration(weightsGiB)
	}
	return a.LoadTime
}
