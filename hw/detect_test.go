package hw

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden inventories in testdata/inventory")

// This machine has no GPU, so NVML cannot run here. The tests drive the inventory, slot and
// memory logic through Library with devices described in testdata/nvml: what NVML answers
// on an HGX H100 (NVSwitch), on A100 PCIe cards joined in pairs by NVLink bridges, and on a
// single L4. Those files are written after the topology such hosts report, not captured from
// them.

// recordedLibrary is Library over a testdata/nvml file.
type recordedLibrary struct {
	Driver  string           `json:"driver"`
	CUDA    int              `json:"cuda"`
	Devices []recordedDevice `json:"devices"`
	initErr error

	mu sync.Mutex // guards the devices' processes and free memory, which tests change
}

type recordedDevice struct {
	lib        *recordedLibrary
	index      int
	NameV      string            `json:"name"`
	UUIDV      string            `json:"uuid"`
	Total      uint64            `json:"total"`
	Free       uint64            `json:"free"`
	CC         [2]int            `json:"cc"`
	MIG        bool              `json:"mig"`
	Procs      []Process         `json:"processes"`
	Bus        string            `json:"bus"`
	Remotes    []string          `json:"nvlink_remotes"`
	Topo       map[string]string `json:"topology"` // peer device position -> level
	P2PNVLinks []int             `json:"p2p_nvlink"`
}

func loadRecorded(t *testing.T, name string) *recordedLibrary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "nvml", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	lib := &recordedLibrary{}
	if err := json.Unmarshal(b, lib); err != nil {
		t.Fatal(err)
	}
	for i := range lib.Devices {
		lib.Devices[i].lib = lib
		lib.Devices[i].index = i
	}
	return lib
}

func (l *recordedLibrary) Init() error                    { return l.initErr }
func (l *recordedLibrary) Shutdown()                      {}
func (l *recordedLibrary) DriverVersion() (string, error) { return l.Driver, nil }
func (l *recordedLibrary) CUDAVersion() (int, error)      { return l.CUDA, nil }
func (l *recordedLibrary) Count() (int, error)            { return len(l.Devices), nil }
func (l *recordedLibrary) Device(i int) (Device, error) {
	if i < 0 || i >= len(l.Devices) {
		return nil, ErrNVML
	}
	return &l.Devices[i], nil
}
func (l *recordedLibrary) DeviceByUUID(uuid string) (Device, error) {
	for i := range l.Devices {
		if l.Devices[i].UUIDV == uuid {
			return &l.Devices[i], nil
		}
	}
	return nil, ErrNVML
}

func (d *recordedDevice) Name() (string, error)     { return d.NameV, nil }
func (d *recordedDevice) UUID() (string, error)     { return d.UUIDV, nil }
func (d *recordedDevice) MIGEnabled() (bool, error) { return d.MIG, nil }
func (d *recordedDevice) PCIBusID() (string, error) { return d.Bus, nil }
func (d *recordedDevice) NVLinkRemotes() []string   { return d.Remotes }
func (d *recordedDevice) ComputeCapability() (int, int, error) {
	return d.CC[0], d.CC[1], nil
}
func (d *recordedDevice) Memory() (uint64, uint64, error) {
	d.lib.mu.Lock()
	defer d.lib.mu.Unlock()
	return d.Total, d.Free, nil
}
func (d *recordedDevice) Processes() ([]Process, error) {
	d.lib.mu.Lock()
	defer d.lib.mu.Unlock()
	return append([]Process{}, d.Procs...), nil
}
func (d *recordedDevice) Topology(peer Device) (string, error) {
	t, ok := d.Topo[strconv.Itoa(peer.(*recordedDevice).index)]
	if !ok {
		return "", ErrNVML
	}
	return t, nil
}
func (d *recordedDevice) NVLinkP2P(peer Device) bool {
	for _, p := range d.P2PNVLinks {
		if p == peer.(*recordedDevice).index {
			return true
		}
	}
	return false
}

// setUsage changes what device i reports, as a running engine would.
func (l *recordedLibrary) setUsage(i int, free uint64, procs []Process) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Devices[i].Free = free
	l.Devices[i].Procs = procs
}

func TestDetectRecordedHosts(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"hgx-4xh100-nvswitch", "4xa100-pcie-bridged", "1xl4"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := DetectWith(loadRecorded(t, name), "gpu-host")
			golden := filepath.Join("testdata", "inventory", name+".json")
			if *update {
				b, _ := json.MarshalIndent(got, "", "  ")
				if err := os.WriteFile(golden, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := readInventory(t, golden)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("detectWith (-want +got):\n%s", diff)
			}
		})
	}
}

func readInventory(t *testing.T, path string) Inventory {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var inv Inventory
	if err := json.Unmarshal(b, &inv); err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestDetectLinks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		host string
		a, b int
		want Link
	}{
		{"NVSwitch pairs count every link", "hgx-4xh100-nvswitch", 0, 3, Link{NVLinks: 18, Topology: "system"}},
		{"bridged pair counts its links", "4xa100-pcie-bridged", 0, 1, Link{NVLinks: 12, Topology: "hostbridge"}},
		{"unbridged pair has none", "4xa100-pcie-bridged", 1, 2, Link{NVLinks: 0, Topology: "system"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inv := DetectWith(loadRecorded(t, tc.host), "h")
			if diff := cmp.Diff(tc.want, inv.GPUs[tc.a].Links[tc.b]); diff != "" {
				t.Errorf("link %d-%d (-want +got):\n%s", tc.a, tc.b, diff)
			}
		})
	}
}

func TestDetectWithoutNVML(t *testing.T) {
	t.Parallel()
	lib := &recordedLibrary{initErr: ErrNoLibrary}
	got := DetectWith(lib, "laptop")
	want := Inventory{
		Reason: "NVML is not available (nvml: libnvidia-ml.so.1 not found): no NVIDIA driver or GPU was found on this host",
		Host:   "laptop",
		GPUs:   []GPU{},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("detectWith (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(got)
	if !strings.Contains(string(b), `"gpus":[]`) {
		t.Errorf("JSON of an empty inventory lacks an empty GPU list: %s", b)
	}
}

func TestConversions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"cuda 12.4", cudaVersionString(12040), "12.4"},
		{"cuda 11.8", cudaVersionString(11080), "11.8"},
		{"cuda unknown", cudaVersionString(0), ""},
		{"topology single", TopologyName(10), "single"},
		{"topology system", TopologyName(50), "system"},
		{"topology unknown", TopologyName(7), "level-7"},
		{"bus id, 8-digit domain", normalizeBusID("00000000:17:00.0"), ":17:00.0"},
		{"bus id, 4-digit domain", normalizeBusID("0000:17:00.0"), ":17:00.0"},
		{"bus id, case", normalizeBusID("0001:AB:00.0"), "1:ab:00.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeProcesses(t *testing.T) {
	t.Parallel()
	got := MergeProcesses([]Process{{PID: 9, UsedMemoryBytes: 5}, {PID: 3, UsedMemoryBytes: 1}}, []Process{{PID: 9, UsedMemoryBytes: 7}})
	want := []Process{{PID: 3, UsedMemoryBytes: 1}, {PID: 9, UsedMemoryBytes: 7}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mergeProcesses (-want +got):\n%s", diff)
	}
}
