package cuda

import (
	"errors"
	"fmt"
)

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
	n, err := driverInt("cuDeviceGetCount", func(a *driverAPI, n *int32) Result { return a.cuDeviceGetCount(n) })
	if err != nil && !errors.Is(err, ErrNoDriver) {
		// A driver that loads but cannot count its devices is as unusable
		// as none.
		return 0, fmt.Errorf("%w: %w", ErrNoDriver, err)
	}
	return n, err
}

// DriverVersion is the CUDA version the driver supports, as 1000·major +
// 10·minor (13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	return driverInt("cuDriverGetVersion", func(a *driverAPI, v *int32) Result { return a.cuDriverGetVersion(v) })
}

// driverInt loads the driver and reads one int32 from it with get.
func driverInt(op string, get func(a *driverAPI, v *int32) Result) (int, error) {
	a, err := driver()
	if err != nil {
		return 0, err
	}
	var v int32
	if err := check(op, get(a, &v)); err != nil {
		return 0, err
	}
	return int(v), nil
}
