//go:build cgo

package hw

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlLibrary is gpuLibrary over go-nvml, which loads libnvidia-ml.so.1 at Init.
type nvmlLibrary struct {
	lib nvml.Interface
}

func newNVMLLibrary() gpuLibrary {
	return &nvmlLibrary{lib: nvml.New()}
}

// nvmlErr turns an NVML return code into an error, nil for SUCCESS.
func nvmlErr(ret nvml.Return) error {
	if ret == nvml.SUCCESS {
		return nil
	}
	return fmt.Errorf("%w: %s", errNVML, nvml.ErrorString(ret))
}

func (l *nvmlLibrary) Init() error {
	ret := l.lib.Init()
	if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
		return errNoLibrary
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

func (l *nvmlLibrary) Device(index int) (gpuDevice, error) {
	d, ret := l.lib.DeviceGetHandleByIndex(index)
	if err := nvmlErr(ret); err != nil {
		return nil, err
	}
	return nvmlDevice{d}, nil
}

func (l *nvmlLibrary) DeviceByUUID(uuid string) (gpuDevice, error) {
	d, ret := l.lib.DeviceGetHandleByUUID(uuid)
	if err := nvmlErr(ret); err != nil {
		return nil, err
	}
	return nvmlDevice{d}, nil
}

// nvmlDevice is gpuDevice over an NVML device handle.
type nvmlDevice struct {
	d nvml.Device
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
	if ret == nvml.ERROR_NOT_SUPPORTED {
		return false, nil
	}
	return current == nvml.DEVICE_MIG_ENABLE, nvmlErr(ret)
}

func (d nvmlDevice) Processes() ([]Process, error) {
	compute, ret := d.d.GetComputeRunningProcesses()
	if err := nvmlErr(ret); err != nil {
		return nil, err
	}
	graphics, ret := d.d.GetGraphicsRunningProcesses()
	if ret != nvml.SUCCESS {
		graphics = nil // not supported on data-centre GPUs in compute mode
	}
	return mergeProcesses(toProcesses(compute), toProcesses(graphics)), nil
}

func toProcesses(infos []nvml.ProcessInfo) []Process {
	out := make([]Process, 0, len(infos))
	for _, p := range infos {
		out = append(out, Process{PID: int(p.Pid), UsedMemoryBytes: p.UsedGpuMemory})
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
func busID(info nvml.PciInfo) string {
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
	for link := 0; link < nvml.NVLINK_MAX_LINKS; link++ {
		state, ret := d.d.GetNvLinkState(link)
		if ret != nvml.SUCCESS {
			if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
				break // no (more) links on this GPU
			}
			continue
		}
		if state != nvml.FEATURE_ENABLED {
			continue
		}
		info, ret := d.d.GetNvLinkRemotePciInfo(link)
		if ret != nvml.SUCCESS {
			out = append(out, "")
			continue
		}
		out = append(out, busID(info))
	}
	return out
}

func (d nvmlDevice) Topology(peer gpuDevice) (string, error) {
	p, ok := peer.(nvmlDevice)
	if !ok {
		return "", fmt.Errorf("%w: peer is not an NVML device", errNVML)
	}
	level, ret := d.d.GetTopologyCommonAncestor(p.d)
	if err := nvmlErr(ret); err != nil {
		return "", err
	}
	return topologyName(int(level)), nil
}

func (d nvmlDevice) NVLinkP2P(peer gpuDevice) bool {
	p, ok := peer.(nvmlDevice)
	if !ok {
		return false
	}
	status, ret := d.d.GetP2PStatus(p.d, nvml.P2P_CAPS_INDEX_NVLINK)
	return ret == nvml.SUCCESS && status == nvml.P2P_STATUS_OK
}
