package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/hw/nvml"
	"github.com/frontier-llm/frontier/inputfile"
	"github.com/frontier-llm/frontier/report"
)

// maxInventoryBytes is the largest inventory `hw --from` reads: room for thousands of GPUs.
const maxInventoryBytes = 16 << 20

// cmdHW prints the GPUs NVML sees: a table, or the inventory as JSON with --json. Where
// NVML is absent it says so and exits 0 with an empty inventory.
func cmdHW(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier hw", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	asJSON := fs.Bool("json", false, "print the inventory as JSON")
	from := fs.String("from", "", "print an inventory saved earlier with --json instead of this host's")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier hw [--json] [--from FILE]")
		fmt.Fprintln(fs.Output())
		fmt.Fprintln(fs.Output(), "List the GPUs NVML sees: memory, compute capability, MIG mode, the processes")
		fmt.Fprintln(fs.Output(), "using them and how they are joined (NVLink or PCIe).")
		fmt.Fprintln(fs.Output())
		fs.PrintDefaults()
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}

	var inv hw.Inventory
	if *from != "" {
		b, err := inputfile.ReadTextContext(ctx, *from, maxInventoryBytes)
		switch {
		case err != nil && ctx.Err() != nil:
			return runtimef("read %s: %w", *from, err)
		case err != nil:
			return invalidf("--from: %w (an inventory is the JSON text frontier hw --json writes, at most %s)", err, inputfile.Size(maxInventoryBytes))
		}
		b = inputfile.TrimBOM(b)
		if err := json.Unmarshal(b, &inv); err != nil {
			return invalidf("%s is not an inventory written by frontier hw --json: %v", *from, err)
		}
		if inv.GPUs == nil {
			inv.GPUs = []hw.GPU{}
		}
	} else {
		inv = nvml.Detect()
	}

	if *asJSON {
		return writeJSON(c, inv)
	}
	return report.WriteInventory(c.stdout, inv)
}
