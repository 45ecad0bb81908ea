//go:build !cgo

package hw

import "fmt"

// nvmlLibrary stands for NVML in a build without cgo, which cannot load libnvidia-ml.
type nvmlLibrary struct{}

func newNVMLLibrary() gpuLibrary { return nvmlLibrary{} }

func (nvmlLibrary) Init() error {
	return fmt.Errorf("%w: this frontier was built without cgo, which NVML needs", errNVML)
}
func (nvmlLibrary) Shutdown()                              {}
func (nvmlLibrary) DriverVersion() (string, error)         { return "", errNVML }
func (nvmlLibrary) CUDAVersion() (int, error)              { return 0, errNVML }
func (nvmlLibrary) Count() (int, error)                    { return 0, errNVML }
func (nvmlLibrary) Device(int) (gpuDevice, error)          { return nil, errNVML }
func (nvmlLibrary) DeviceByUUID(string) (gpuDevice, error) { return nil, errNVML }
