package cuda

import "fmt"

// Available reports, cheaply after the first call, whether CUDA can be used
// here: nil, or an error wrapping ErrNoDriver that says why not.
func Available() error {
	n, err := DeviceCount()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: the driver sees no GPU; check nvidia-smi and CUDA_VISIBLE_DEVICES", ErrNoDriver)
	}
	return nil
}

// DeviceCount is the number of GPUs the driver exposes.
func DeviceCount() (int, error) {
	a, err := driver()
	if err != nil {
		return 0, err
	}
	var n int32
	if err := check("cuDeviceGetCount", a.cuDeviceGetCount(&n)); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNoDriver, err)
	}
	return int(n), nil
}

// DriverVersion is the CUDA version the driver supports, as 1000·major +
// 10·minor (13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	a, err := driver()
	if err != nil {
		return 0, err
	}
	var v int32
	if err := check("cuDriverGetVersion", a.cuDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}
