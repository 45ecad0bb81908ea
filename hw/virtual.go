package hw

import "fmt"

// VirtualGPUs makes n GPUs of sku for the simulator: no NVML, nothing to wait for, fully
// free, and joined to each other by NVLink when the SKU's interconnect is NVLink.
func VirtualGPUs(sku SKU, n int) []GPU {
	gpus := make([]GPU, n)
	mem := uint64(sku.MemoryGiB * (1 << 30))
	name := sku.Display
	if name == "" {
		name = sku.Name
	}
	for i := range gpus {
		g := GPU{
			Index:            i,
			UUID:             fmt.Sprintf("virtual-%s-%d", sku.Name, i),
			Name:             name,
			MemoryTotalBytes: mem,
			MemoryFreeBytes:  mem,
			Processes:        []Process{},
			Virtual:          true,
		}
		if n > 1 {
			g.Links = map[int]Link{}
			for j := 0; j < n; j++ {
				if j == i {
					continue
				}
				l := Link{Topology: "system"}
				if sku.Interconnect == "nvlink" {
					l = Link{NVLinks: 1, Topology: "nvlink"}
				}
				g.Links[j] = l
			}
		}
		gpus[i] = g
	}
	return gpus
}
