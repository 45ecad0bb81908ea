//go:build !cgo

package nvml

import (
	"fmt"

	"github.com/frontier-llm/frontier/hw"
)

// nvmlLibrary stands for NVML in a build without cgo, which cannot load libnvidia-ml.
type nvmlLibrary struct{}

// New returns NVML as an hw.Library; Init loads the library.
func New() hw.Library { return nvmlLibrary{} }

func (nvmlLibrary) Init() error {
	return fmt.Errorf("%w: this frontier was built without cgo, which NVML needs", hw.ErrNVML)
}
func (nvmlLibrary) Shutdown()                              {}
func (nvmlLibrary) DriverVersion() (string, error)         { return "", hw.ErrNVML }
func (nvmlLibrary) CUDAVersion() (int, error)              { return 0, hw.ErrNVML }
func (nvmlLibrary) Count() (int, error)                    { return 0, hw.ErrNVML }
func (nvmlLibrary) Device(int) (hw.Device, error)          { return nil, hw.ErrNVML }
func (nvmlLibrary) DeviceByUUID(string) (hw.Device, error) { return nil, hw.ErrNVML }
