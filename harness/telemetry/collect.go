package telemetry

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrUnavailable reports that NVML could not be initialised (no driver, no
// permission, ...). The wrapping error says why; test with errors.Is.
var ErrUnavailable = errors.New("GPU telemetry unavailable")

// NewLibrary returns the real NVML library. Nothing is loaded until Init,
// which [Collect] calls, so this is safe on a machine without a GPU.
func NewLibrary() nvml.Interface {
	return nvml.New()
}

// Collect initialises lib, reads a [Snapshot] and shuts lib down again.
//
// When Init fails it returns an error wrapping [ErrUnavailable] and makes no
// other call on lib. Per-field failures are noted in the snapshot, not
// returned; only failing to count or open the devices fails the snapshot.
func Collect(lib nvml.Interface) (snap *Snapshot, err error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, unavailable(ret)
	}
	defer func() {
		ret := lib.Shutdown()
		if ret != nvml.SUCCESS && err == nil {
			snap.Notes = append(snap.Notes, "nvml_shutdown: "+ret.Error())
		}
	}()

	snap = &Snapshot{}
	rec := recorder{}
	if v, ret := lib.SystemGetDriverVersion(); rec.ok("driver_version", ret) {
		snap.DriverVersion = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); rec.ok("cuda_driver_version", ret) {
		snap.CUDADriverVersion = cudaVersion(v)
	}
	snap.Notes = rec.notes

	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("telemetry: count GPUs: %w; check that nvidia-smi lists the GPUs", ret)
	}
	snap.Devices = make([]Device, 0, n)
	for i := range n {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("telemetry: open GPU %d: %w; check `nvidia-smi -i %d` and the device permissions", i, ret, i)
		}
		snap.Devices = append(snap.Devices, readDevice(i, dev))
	}
	return snap, nil
}

// unavailable builds the Init-failure error. It must not call ret.Error():
// when libnvidia-ml is loaded but Init failed, that calls into NVML.
func unavailable(ret nvml.Return) error {
	var reason string
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		reason = "NVML library not found: no NVIDIA driver on this machine"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		reason = "NVIDIA kernel driver is not loaded"
	case nvml.ERROR_NO_PERMISSION:
		reason = "no permission to talk to the NVIDIA driver"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		reason = "NVML library and kernel driver versions differ (driver updated without a reboot?)"
	default:
		reason = fmt.Sprintf("NVML Init failed with return code %d", int32(ret))
	}
	return fmt.Errorf("%w: %s; run on a host where nvidia-smi works, or skip GPU telemetry", ErrUnavailable, reason)
}

// cudaVersion turns NVML's 1000*major + 10*minor into "major.minor".
func cudaVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// recorder turns NVML returns into notes for fields left empty.
type recorder struct{ notes []string }

// ok reports whether ret is SUCCESS, noting field otherwise.
func (r *recorder) ok(field string, ret nvml.Return) bool {
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED:
		r.notes = append(r.notes, field+": not supported")
	default:
		r.notes = append(r.notes, field+": "+ret.Error())
	}
	return false
}
