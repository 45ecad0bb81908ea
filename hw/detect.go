package hw

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Library is the part of NVML that this package uses. Package hw/nvml implements it with
// go-nvml; the tests implement it with recorded devices, since no GPU is needed to check the
// logic around it.
type Library interface {
	// Init loads and initialises the library; an error means NVML is not available.
	Init() error
	Shutdown()
	DriverVersion() (string, error)
	// CUDAVersion is the CUDA version the driver supports, as NVML encodes it (12040).
	CUDAVersion() (int, error)
	Count() (int, error)
	Device(index int) (Device, error)
	DeviceByUUID(uuid string) (Device, error)
}

// Device is one GPU as Library sees it.
type Device interface {
	Name() (string, error)
	UUID() (string, error)
	Memory() (total, free uint64, err error)
	ComputeCapability() (major, minor int, err error)
	MIGEnabled() (bool, error)
	// Processes lists compute and graphics processes, one entry per pid.
	Processes() ([]Process, error)
	PCIBusID() (string, error)
	// NVLinkRemotes lists the PCI bus id at the far end of each active NVLink link.
	NVLinkRemotes() []string
	// Topology is the NVML topology level between this GPU and peer: "internal", "single",
	// "multiple", "hostbridge", "node" or "system".
	Topology(peer Device) (string, error)
	// NVLinkP2P reports whether peer-to-peer traffic to peer goes over NVLink (directly or
	// through NVSwitch).
	NVLinkP2P(peer Device) bool
}

// ErrNVML wraps every failure of the NVML library.
var ErrNVML = errors.New("nvml")

// ErrNoLibrary is NVML's library missing: no NVIDIA driver is installed.
var ErrNoLibrary = fmt.Errorf("%w: libnvidia-ml.so.1 not found", ErrNVML)

// DetectWith builds the inventory of host from lib: package hw/nvml passes NVML, the tests a
// recorded inventory.
func DetectWith(lib Library, host string) Inventory {
	inv := Inventory{Host: host, GPUs: []GPU{}}
	if err := lib.Init(); err != nil {
		inv.Reason = fmt.Sprintf("NVML is not available (%v)", err)
		if errors.Is(err, ErrNoLibrary) {
			inv.Reason += ": no NVIDIA driver or GPU was found on this host"
		}
		return inv
	}
	defer lib.Shutdown()
	n, err := lib.Count()
	if err != nil {
		inv.Reason = fmt.Sprintf("NVML could not count the GPUs: %v", err)
		return inv
	}
	inv.Available = true
	if v, err := lib.DriverVersion(); err == nil {
		inv.DriverVersion = v
	}
	if v, err := lib.CUDAVersion(); err == nil {
		inv.CUDAVersion = cudaVersionString(v)
	}
	devs := make([]Device, 0, n)
	for i := 0; i < n; i++ {
		d, err := lib.Device(i)
		if err != nil {
			inv.Reason = joinReason(inv.Reason, fmt.Sprintf("GPU %d: %v", i, err))
			continue
		}
		g, err := readGPU(i, d)
		if err != nil {
			inv.Reason = joinReason(inv.Reason, fmt.Sprintf("GPU %d: %v", i, err))
			continue
		}
		devs = append(devs, d)
		inv.GPUs = append(inv.GPUs, g)
	}
	linkGPUs(inv.GPUs, devs)
	if n == 0 {
		inv.Reason = "NVML is loaded but sees no GPUs"
	}
	return inv
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// readGPU reads what one device reports about itself. Name, UUID and memory are required;
// the rest is best effort.
func readGPU(index int, d Device) (GPU, error) {
	g := GPU{Index: index, Processes: []Process{}}
	var err error
	if g.Name, err = d.Name(); err != nil {
		return g, fmt.Errorf("name: %w", err)
	}
	if g.UUID, err = d.UUID(); err != nil {
		return g, fmt.Errorf("uuid: %w", err)
	}
	if g.MemoryTotalBytes, g.MemoryFreeBytes, err = d.Memory(); err != nil {
		return g, fmt.Errorf("memory: %w", err)
	}
	if major, minor, err := d.ComputeCapability(); err == nil {
		g.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	}
	if mig, err := d.MIGEnabled(); err == nil {
		g.MIG = mig
	}
	if ps, err := d.Processes(); err == nil {
		g.Processes = ps
	}
	return g, nil
}

// linkGPUs fills each GPU's Links: the topology level to every other GPU and the number of
// NVLink links between them. A pair joined through NVSwitch (peer-to-peer over NVLink, but
// no link ends at the peer) counts every active link of the GPU, as nvidia-smi topo does.
func linkGPUs(gpus []GPU, devs []Device) {
	busToIndex := map[string]int{}
	for i, d := range devs {
		if id, err := d.PCIBusID(); err == nil {
			busToIndex[normalizeBusID(id)] = gpus[i].Index
		}
	}
	for i, d := range devs {
		remotes := d.NVLinkRemotes()
		direct := map[int]int{}
		for _, r := range remotes {
			if peer, ok := busToIndex[normalizeBusID(r)]; ok {
				direct[peer]++
			}
		}
		for j, peer := range devs {
			if i == j {
				continue
			}
			l := Link{NVLinks: direct[gpus[j].Index]}
			if topo, err := d.Topology(peer); err == nil {
				l.Topology = topo
			}
			if l.NVLinks == 0 && len(remotes) > 0 && d.NVLinkP2P(peer) {
				l.NVLinks = len(remotes)
			}
			if gpus[i].Links == nil {
				gpus[i].Links = map[int]Link{}
			}
			gpus[i].Links[gpus[j].Index] = l
		}
	}
}

// normalizeBusID makes PCI bus ids comparable: NVML reports "00000000:17:00.0" in one call
// and "0000:17:00.0" in another.
func normalizeBusID(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	if dom, rest, ok := strings.Cut(id, ":"); ok {
		dom = strings.TrimLeft(dom, "0")
		return dom + ":" + rest
	}
	return id
}

// cudaVersionString renders NVML's encoded CUDA version, 12040, as "12.4".
func cudaVersionString(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
}

// TopologyName is the name of an NVML topology level, as Device.Topology reports it.
func TopologyName(level int) string {
	switch level {
	case 0:
		return "internal"
	case 10:
		return "single"
	case 20:
		return "multiple"
	case 30:
		return "hostbridge"
	case 40:
		return "node"
	case 50:
		return "system"
	}
	return fmt.Sprintf("level-%d", level)
}

// MergeProcesses merges compute and graphics processes into one entry per pid, sorted by pid.
func MergeProcesses(lists ...[]Process) []Process {
	byPID := map[int]Process{}
	for _, l := range lists {
		for _, p := range l {
			q := byPID[p.PID]
			q.PID = p.PID
			if p.UsedMemoryBytes > q.UsedMemoryBytes {
				q.UsedMemoryBytes = p.UsedMemoryBytes
			}
			byPID[p.PID] = q
		}
	}
	out := make([]Process, 0, len(byPID))
	for _, p := range byPID {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
