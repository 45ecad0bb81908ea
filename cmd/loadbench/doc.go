// Command loadbench measures frontier's load generator against a minimal streaming server on
// loopback, in the same process: the request rate it sustains with short outputs, the
// streamed chunks a second it reads with long outputs, how late requests leave against an
// open-loop schedule; and each against a bare Go loop that sends the same requests without
// measuring anything, in the same run, so that the generator's cost is a ratio.
//
//	go run ./cmd/loadbench [-requests 20000] [-chunks 800000] [-rate 1000] [-lag-seconds 5]
//
// It leaves the measurement itself to package workload and the server to package
// workload/workloadtest; docs/workload.md quotes its output with the machine it ran on.
package main
