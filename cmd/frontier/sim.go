package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/sim"
	"github.com/frontier-llm/frontier/vllm"
)

const simUsage = `usage: frontier sim serve MODEL --sku SKU [--architecture NAME] [--vllm-version V] [vllm serve flags]

A simulated vLLM server: vLLM's flags, endpoints, streaming format, metrics, startup log
lines and startup failures, with token timing from a performance model of the GPU SKU.
Every number it produces is simulated.

The architecture is --architecture, else MODEL when it names a catalog entry or a
Hugging Face repository of one (meta-llama/Llama-3.1-8B-Instruct), else MODEL/config.json.

The vLLM flags are parsed as the emulated release line parses them (--vllm-version, default
%s; lines %s; a newer release is emulated as the newest line, with a warning): an unknown
flag or a bad value is refused with vLLM's usage line and message and exit status 2, and
that line's defaults and memory accounting apply. --version prints the emulated version and
--help (or --help=all) the emulated line's options in argparse's layout, as vLLM does; -h
prints this text.

--load-time auto|DUR takes as long to load the weights as reading them at %.3g GB/s takes
(auto), or DUR; without it the server loads at once.

Fault injection (for tests):
  --fault-crash-after N         exit once N requests have finished, cutting off the others
  --fault-hang-startup          never finish starting
  --fault-slow-start DUR        take DUR longer to start
  --fault-startup-oom           fail at startup with CUDA out of memory
  --fault-error-burst SPEC      STATUS:FROM:COUNT[,...]: answer requests FROM..FROM+COUNT-1 with STATUS
  --fault-malformed-stream F    a fraction F of streams send a malformed chunk and stop
  --fault-stall-after N         streams stop after N tokens without closing
  --fault-bind-port N           bind port N instead of --port (to test a taken port)

SKUs: %s
Architectures: %s
`

func cmdSim(ctx context.Context, c *cli, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 0 {
			_, err := fmt.Fprintf(c.stdout, simUsage, vllm.Current, strings.Join(vllm.Versions(), ", "), sim.LoadBandwidthGBps, strings.Join(hw.SKUNames(), ", "), strings.Join(sim.ArchNames(), ", "))
			return err
		}
		fmt.Fprintf(c.stderr, simUsage, vllm.Current, strings.Join(vllm.Versions(), ", "), sim.LoadBandwidthGBps, strings.Join(hw.SKUNames(), ", "), strings.Join(sim.ArchNames(), ", "))
		return silent(exitInvalid)
	}
	if args[0] != "serve" {
		return invalidf("unknown subcommand %q; want serve", args[0])
	}
	version := vllm.Current
	for i, a := range args[1:] {
		if v, ok := strings.CutPrefix(a, "--vllm-version="); ok {
			version = v
		} else if (a == "--vllm-version" || a == "--vllm_version") && i+2 < len(args) {
			version = args[i+2]
		}
	}
	for _, a := range args[1:] {
		switch a {
		case "-h":
			_, err := fmt.Fprintf(c.stdout, simUsage, vllm.Current, strings.Join(vllm.Versions(), ", "), sim.LoadBandwidthGBps, strings.Join(hw.SKUNames(), ", "), strings.Join(sim.ArchNames(), ", "))
			return err
		case "--help", "--help=all":
			// The emulated line's options in argparse's layout, as `vllm serve --help=all`
			// prints them: what the vllm engine's preflight reads.
			help, err := sim.ServeHelp(version)
			if err != nil {
				return as("frontier sim serve", invalid(err))
			}
			_, err = fmt.Fprint(c.stdout, help)
			return err
		case "--version", "-v":
			v, err := sim.ServeVersion(version)
			if err != nil {
				return as("frontier sim serve", invalid(err))
			}
			_, err = fmt.Fprintln(c.stdout, v)
			return err
		}
	}
	sa, err := sim.ParseServeArgs(args[1:])
	var argErr *vllm.ArgError
	if errors.As(err, &argErr) {
		// vLLM's argparse: its usage line and message, and its exit status.
		fmt.Fprint(c.stderr, argErr.Stderr())
		return silent(argErr.ExitCode())
	}
	if err != nil {
		return as("frontier sim serve", invalid(err))
	}
	if sa.SKU == "" {
		return as("frontier sim serve", invalidf("--sku is required; one of %s", strings.Join(hw.SKUNames(), ", ")))
	}
	sku, ok := hw.LookupSKU(sa.SKU)
	if !ok {
		return as("frontier sim serve", invalidf("unknown --sku %q; want one of %s", sa.SKU, strings.Join(hw.SKUNames(), ", ")))
	}
	arch, err := sim.ResolveServeArch(sa.Architecture, sa.Model)
	if err != nil {
		return as("frontier sim serve", invalid(err))
	}
	settings := map[string]any{"vllm_version": sa.VLLMVersion}
	for k, v := range sa.Settings {
		settings[k] = v
	}
	cfg, err := sim.ConfigFromSettings(settings, 0)
	if err != nil {
		return as("frontier sim serve", invalid(err))
	}
	err = sim.Serve(ctx, sim.ServeOptions{Args: sa, Arch: arch, SKU: sku, Config: cfg, Log: c.stderr})
	if err != nil {
		var se *sim.StartupError
		if errors.As(err, &se) || errors.Is(err, sim.ErrCrashed) {
			return silent(exitRuntime) // the server's log has said why, as vLLM's does
		}
		return as("frontier sim serve", err)
	}
	return nil
}
