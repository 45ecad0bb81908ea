//go:build !linux

package workload

import "time"

// sleepPrecise sleeps for d, a short wait.
func sleepPrecise(d time.Duration) { time.Sleep(d) }
