package cuda

import (
	"errors"
	"fmt"
)

// ErrNoDriver means libcuda.so.1 could not be loaded or initialised, or has no
// device: the machine cannot run CUDA. Errors wrapping it say why.
var ErrNoDriver = errors.New("no usable CUDA driver")

// ErrNoNVRTC means no NVRTC library could be loaded, so CUDA C cannot be
// compiled at run time (cubins already in the disk cache still load).
var ErrNoNVRTC = errors.New("no NVRTC library")

// ErrClosed is returned by methods of a Device after Close.
var ErrClosed = errors.New("cuda: device is closed")

// Result is a CUresult: the status code every driver API call returns.
type Result int32

// success is CUDA_SUCCESS.
const success Result = 0

// Error is a driver API call that returned a code other than CUDA_SUCCESS.
// Match it with errors.As to inspect Code.
type Error struct {
	Op   string // the driver function that failed, e.g. "cuMemAlloc"
	Code Result
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s: %s (CUresult %d)", e.Op, e.Code.Name(), int32(e.Code))
	if h := hints[e.Code]; h != "" {
		msg += ": " + h
	}
	return msg
}

// check turns a driver status into an error naming the call.
func check(op string, r Result) error {
	if r == success {
		return nil
	}
	return &Error{Op: op, Code: r}
}

// Name is the code's CUDA_ERROR_* name: from cuGetErrorName when the driver
// is loaded (it knows codes newer than this package), else from a built-in
// table of common codes.
func (r Result) Name() string {
	if name := driverErrorName(r); name != "" {
		return name
	}
	if name, ok := resultNames[r]; ok {
		return name
	}
	return fmt.Sprintf("CUDA_ERROR_%d", int32(r))
}

// String implements fmt.Stringer.
func (r Result) String() string { return r.Name() }
