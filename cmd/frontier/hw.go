package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/olekukonko/tablewriter"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/hw/nvml"
)

// cmdHW prints the GPUs NVML sees: a table, or the inventory as JSON with --json. Where
// NVML is absent it says so and exits 0 with an empty inventory.
func cmdHW(_ context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier hw", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	asJSON := fs.Bool("json", false, "print the inventory as JSON")
	from := fs.String("from", "", "print an inventory saved earlier with --json instead of this host's")
	fs.Usage = func() {
		fmt.Fprintln(c.stderr, "usage: frontier hw [--json] [--from FILE]")
		fmt.Fprintln(c.stderr)
		fmt.Fprintln(c.stderr, "List the GPUs NVML sees: memory, compute capability, MIG mode, the processes")
		fmt.Fprintln(c.stderr, "using them and how they are joined (NVLink or PCIe).")
		fmt.Fprintln(c.stderr)
		fs.PrintDefaults()
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}

	var inv hw.Inventory
	if *from != "" {
		b, err := os.ReadFile(*from)
		if err != nil {
			return invalid(err)
		}
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
	return writeInventoryTable(c.stdout, inv)
}

// writeInventoryTable prints the GPUs, then how each pair is joined, as nvidia-smi topo -m
// does.
func writeInventoryTable(w io.Writer, inv hw.Inventory) error {
	host := inv.Host
	if host == "" {
		host = "this host"
	}
	if !inv.Available {
		_, err := fmt.Fprintf(w, "No GPUs on %s: %s.\n", host, strings.TrimSuffix(inv.Reason, "."))
		return err
	}
	fmt.Fprintf(w, "%s: driver %s, CUDA %s, %d GPU(s)\n", host, orDash(inv.DriverVersion), orDash(inv.CUDAVersion), len(inv.GPUs))
	if inv.Reason != "" {
		fmt.Fprintf(w, "note: %s\n", inv.Reason)
	}
	if len(inv.GPUs) == 0 {
		return nil
	}
	t := tablewriter.NewWriter(w)
	t.Header("GPU", "Name", "Free", "Total", "CC", "MIG", "Processes", "UUID")
	rows := make([][]string, 0, len(inv.GPUs))
	for _, g := range inv.GPUs {
		mig := "off"
		if g.MIG {
			mig = "on"
		}
		rows = append(rows, []string{
			fmt.Sprint(g.Index), g.Name,
			fmt.Sprintf("%.1f GiB", gib(g.MemoryFreeBytes)), fmt.Sprintf("%.1f GiB", gib(g.MemoryTotalBytes)),
			orDash(g.ComputeCapability), mig, processes(g.Processes), g.UUID,
		})
	}
	if err := t.Bulk(rows); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(inv.GPUs) < 2 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Links (NV# = NVLink links; otherwise the PCIe path: PIX, PXB, PHB, NODE, SYS):")
	topo := tablewriter.NewWriter(w)
	header := []any{""}
	for _, g := range inv.GPUs {
		header = append(header, fmt.Sprintf("GPU %d", g.Index))
	}
	topo.Header(header...)
	rows = rows[:0]
	for _, a := range inv.GPUs {
		row := []string{fmt.Sprintf("GPU %d", a.Index)}
		for _, b := range inv.GPUs {
			if a.Index == b.Index {
				row = append(row, "X")
				continue
			}
			row = append(row, linkLabel(a.Links[b.Index]))
		}
		rows = append(rows, row)
	}
	if err := topo.Bulk(rows); err != nil {
		return err
	}
	return topo.Render()
}

// linkLabel writes a link as nvidia-smi topo -m does.
func linkLabel(l hw.Link) string {
	if l.NVLinks > 0 {
		return fmt.Sprintf("NV%d", l.NVLinks)
	}
	switch l.Topology {
	case "internal":
		return "X"
	case "single":
		return "PIX"
	case "multiple":
		return "PXB"
	case "hostbridge":
		return "PHB"
	case "node":
		return "NODE"
	case "system":
		return "SYS"
	case "":
		return "-"
	}
	return l.Topology
}

func processes(ps []hw.Process) string {
	if len(ps) == 0 {
		return "none"
	}
	sorted := append([]hw.Process(nil), ps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].PID < sorted[j].PID })
	parts := make([]string, len(sorted))
	for i, p := range sorted {
		parts[i] = fmt.Sprintf("%d (%.1f GiB)", p.PID, gib(p.UsedMemoryBytes))
	}
	return strings.Join(parts, ", ")
}

func gib(b uint64) float64 { return float64(b) / (1 << 30) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
