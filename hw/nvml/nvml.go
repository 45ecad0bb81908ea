//go:build cgo

package nvml

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/frontier-llm/frontier/hw"
)

// nvmlLibrary is hw.Library over go-nvml, which loads libnvidia-ml.so.1 at Init.
type nvmlLibrary struct {
	lib gonvml.Interface
}

// New returns NVML as an hw.Library; Init loads the library.
func New() hw.Library {
	return &nvmlLibrary{lib: gonvml.New()}
}

// nvmlErr turns an NVML return code into an error, nil for SUCCESS.
func nvmlErr(ret gonvml.Return) error {
	if ret == gonvml.SUCCESS {
		return nil
	}
	return fmt.Errorf("%w: %s", hw.ErrNVML, gonvml.ErrorString(ret))
}

func (l *nvmlLibrary) Init() error {
	ret := l.lib.Init()
	if ret == gonvml.ERROR_LIBRARY_NOT_FOUND {
		return hw.ErrNoLibrary
	}
	return nvmlErr(ret)
}

func (l *nvmlLibrary) Shutdown() { _ = l.lib.Shutdown() }

func (l *nvmlLibrary) DriverVersion() (string, error) {
	v, ret := l.lib.SystemGetDriverVersion()
	return v, nvmlErr(ret)
}

func (l *nvmlLibrary) CUDAVersion() (int, error) {
	v, ret := l.lib.SystemGetCudaDriverVersion()
	return v, nvmlErr(ret)
}

func (l *nvmlLibrary) Count() (int, error) {
	n, ret := l.lib.DeviceGetCount()
	return n, nvmlErr(ret)
}

func (l *nvmlLibrary) Device(index int) (hw.Device, error) {
	d, ret := l.lib.DeviceGetHandleByIndex(index)
	if err := nvmlErr(ret); err != nil {
		return nil, err
	}
	return nvmlDevice{d}, nil
}

func (l *nvmlLibrary) DeviceByUUID(uuid string) (hw.Device, error) {
	d, ret := l.lib.DeviceGetHandleByUUID(uuid)
	if err := nvmlErr(ret); err != nil {
		return nil, err
	}
	return nvmlDevice{d}, nil
}

// nvmlDevice is hw.Device over an NVML device handle.
type nvmlDevice struct {
	d gonvml.Device
}

func (d nvmlDevice) Name() (string, error) {
	v, ret := d.d.GetName()
	return v, nvmlErr(ret)
}

func (d nvmlDevice) UUID() (string, error) {
	v, ret := d.d.GetUUID()
	return v, nvmlErr(ret)
}

func (d nvmlDevice) Memory() (uint64, uint64, error) {
	m, ret := d.d.GetMemoryInfo()
	return m.Total, m.Free, nvmlErr(ret)
}

func (d nvmlDevice) ComputeCapability() (int, int, error) {
	major, minor, ret := d.d.GetCudaComputeCapability()
	return major, minor, nvmlErr(ret)
}

func (d nvmlDevice) MIGEnabled() (bool, error) {
	current, _, ret := d.d.GetMigMode()
	if ret == gonvml.ERROR_NOT_SUPPORTED {
		return false, nil
	}
	return current == gonvml.DEVICE_MIG_ENABLE, nvmlErr(ret)
}

func (d nvmlDevice) Processes() ([]hw.Process, error) {
	compute, ret := d.d.GetComputeRunningProcesses()
	if err := nvmlErr(ret); err != nil {
		return nil, err
	}
	graphics, ret := d.d.GetGraphicsRunningProcesses()
	if ret != gonvml.SUCCESS {
		graphics = nil // not supported on data-centre GPUs in compute mode
	}
	return hw.MergeProcesses(toProcesses(compute), toProcesses(graphics)), nil
}

func toProcesses(infos []gonvml.ProcessInfo) []hw.Process {
	out := make([]hw.Process, 0, len(infos))
	for _, p := range infos {
		out = append(out, hw.Process{PID: int(p.Pid), UsedMemoryBytes: p.UsedGpuMemory})
	}
	return out
}

func (d nvmlDevice) PCIBusID() (string, error) {
	info, ret := d.d.GetPciInfo()
	if err := nvmlErr(ret); err != nil {
		return "", err
	}
	return busID(info), nil
}

// busID reads the NUL-terminated bus id of a PciInfo.
func busID(info gonvml.PciInfo) string {
	b := make([]byte, 0, len(info.BusId))
	for _, c := range info.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

func (d nvmlDevice) NVLinkRemotes() []string {
	var out []string
	for link := 0; link < gonvml.NVLINK_MAX_LINKS; link++ {
		state, ret := d.d.GetNvLinkState(link)
		if ret != gonvml.SUCCESS {
			if ret == gonvml.ERROR_NOT_SUPPORTED || ret == gonvml.ERROR_INVALID_ARGUMENT {
				break // no (more) links on this GPU
			}
			continue
		}
		if state != gonvml.FEATURE_ENABLED {
			continue
		}
		info, ret := d.d.GetNvLinkRemotePciInfo(link)
		if ret != gonvml.SUCCESS {
			out = append(out, "")
			continue
		}
		out = append(out, busID(info))
	}
	return out
}

func (d nvmlDevice) Topology(peer hw.Device) (string, error) {
	p, ok := peer.(nvmlDevice)
	if !ok {
		return "", fmt.Errorf("%w: peer is not an NVML device", hw.ErrNVML)
	}
	level, ret := d.d.GetTopologyCommonAncestor(p.d)
	if err := nvmlErr(ret); err != nil {
		return "", err
	}
	return hw.TopologyName(int(level)), nil
}

func (d nvmlDevice) NVLinkP2P(peer hw.Device) bool {
	p, ok := peer.(nvmlDevice)
	if !ok {
		return false
	}
	status, ret := d.d.GetP2PStatus(p.d, gonvml.P2P_CAPS_INDEX_NVLINK)
	return ret == gonvml.SUCCESS && status == gonvml.P2P_STATUS_OK
}
