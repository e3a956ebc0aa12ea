package cuda

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// driverLib is the soname of the CUDA driver library; the unversioned
// libcuda.so is only present with development packages.
const driverLib = "libcuda.so.1"

// driverAPI holds the libcuda entry points the package uses. Field names are
// the API names; each field's sym tag names the symbol bound to it (see
// symbolsOf), the versioned one that cuda.h maps the API name to.
type driverAPI struct {
	// Driver and devices.
	cuInit                    func(flags uint32) Result                    `sym:"cuInit"`
	cuDriverGetVersion        func(v *int32) Result                        `sym:"cuDriverGetVersion"`
	cuDeviceGetCount          func(n *int32) Result                        `sym:"cuDeviceGetCount"`
	cuDeviceGet               func(dev *int32, ordinal int32) Result       `sym:"cuDeviceGet"`
	cuDeviceGetName           func(name *byte, n int32, dev int32) Result  `sym:"cuDeviceGetName"`
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) Result `sym:"cuDeviceGetAttribute"`
	cuDeviceTotalMem          func(bytes *uint64, dev int32) Result        `sym:"cuDeviceTotalMem_v2"`
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) Result         `sym:"cuDevicePrimaryCtxRetain"`
	cuDevicePrimaryCtxRelease func(dev int32) Result                       `sym:"cuDevicePrimaryCtxRelease_v2"`

	// Contexts and memory.
	cuCtxSetCurrent      func(ctx uintptr) Result                                         `sym:"cuCtxSetCurrent"`
	cuCtxSynchronize     func() Result                                                    `sym:"cuCtxSynchronize"`
	cuMemAlloc           func(p *uint64, n uint64) Result                                 `sym:"cuMemAlloc_v2"`
	cuMemFree            func(p uint64) Result                                            `sym:"cuMemFree_v2"`
	cuMemGetAddressRange func(base *uint64, size *uint64, p uint64) Result                `sym:"cuMemGetAddressRange_v2"`
	cuMemcpyHtoD         func(dst uint64, src unsafe.Pointer, n uint64) Result            `sym:"cuMemcpyHtoD_v2"`
	cuMemcpyDtoH         func(dst unsafe.Pointer, src uint64, n uint64) Result            `sym:"cuMemcpyDtoH_v2"`
	cuMemcpyDtoD         func(dst, src uint64, n uint64) Result                           `sym:"cuMemcpyDtoD_v2"`
	cuMemcpyHtoDAsync    func(dst uint64, src unsafe.Pointer, n uint64, s uintptr) Result `sym:"cuMemcpyHtoDAsync_v2"`
	cuMemcpyDtoHAsync    func(dst unsafe.Pointer, src uint64, n uint64, s uintptr) Result `sym:"cuMemcpyDtoHAsync_v2"`
	cuMemcpyDtoDAsync    func(dst, src uint64, n uint64, s uintptr) Result                `sym:"cuMemcpyDtoDAsync_v2"`
	cuMemsetD8           func(p uint64, v uint8, n uint64) Result                         `sym:"cuMemsetD8_v2"`
	cuMemsetD8Async      func(p uint64, v uint8, n uint64, s uintptr) Result              `sym:"cuMemsetD8Async"`

	// Streams and events.
	cuStreamCreate      func(s *uintptr, flags uint32) Result        `sym:"cuStreamCreate"`
	cuStreamDestroy     func(s uintptr) Result                       `sym:"cuStreamDestroy_v2"`
	cuStreamSynchronize func(s uintptr) Result                       `sym:"cuStreamSynchronize"`
	cuEventCreate       func(e *uintptr, flags uint32) Result        `sym:"cuEventCreate"`
	cuEventRecord       func(e, s uintptr) Result                    `sym:"cuEventRecord"`
	cuEventSynchronize  func(e uintptr) Result                       `sym:"cuEventSynchronize"`
	cuEventQuery        func(e uintptr) Result                       `sym:"cuEventQuery"`
	cuEventElapsedTime  func(ms *float32, start, end uintptr) Result `sym:"cuEventElapsedTime"`
	cuEventDestroy      func(e uintptr) Result                       `sym:"cuEventDestroy_v2"`

	// Modules and launches.
	cuModuleLoadData    func(m *uintptr, image unsafe.Pointer) Result                                                                         `sym:"cuModuleLoadData"`
	cuModuleUnload      func(m uintptr) Result                                                                                                `sym:"cuModuleUnload"`
	cuModuleGetFunction func(f *uintptr, m uintptr, name string) Result                                                                       `sym:"cuModuleGetFunction"`
	cuLaunchKernel      func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params unsafe.Pointer, extra unsafe.Pointer) Result `sym:"cuLaunchKernel"`

	// Graphs.
	cuStreamBeginCapture        func(s uintptr, mode int32) Result                  `sym:"cuStreamBeginCapture_v2"`
	cuStreamEndCapture          func(s uintptr, g *uintptr) Result                  `sym:"cuStreamEndCapture"`
	cuGraphInstantiateWithFlags func(exec *uintptr, g uintptr, flags uint64) Result `sym:"cuGraphInstantiateWithFlags"`
	cuGraphLaunch               func(exec, s uintptr) Result                        `sym:"cuGraphLaunch"`
	cuGraphDestroy              func(g uintptr) Result                              `sym:"cuGraphDestroy"`
	cuGraphExecDestroy          func(exec uintptr) Result                           `sym:"cuGraphExecDestroy"`

	// IPC.
	cuIpcGetMemHandle   func(h *ipcHandle, p uint64) Result               `sym:"cuIpcGetMemHandle"`
	cuIpcOpenMemHandle  func(p *uint64, h ipcHandle, flags uint32) Result `sym:"cuIpcOpenMemHandle_v2"`
	cuIpcCloseMemHandle func(p uint64) Result                             `sym:"cuIpcCloseMemHandle"`

	// cuGetErrorName is optional: without it codes are named from a table.
	cuGetErrorName func(r Result, name **byte) Result
	// vmm is optional too: nil when the driver lacks any of it.
	vmm *vmmAPI
	// order is optional as well (order.go): cross-stream waits, stream
	// memory operations, host registration.
	order *orderAPI
}

// ipcHandle is CUipcMemHandle, passed by value to cuIpcOpenMemHandle.
type ipcHandle struct{ B [64]byte }

var (
	drvOnce sync.Once
	drvErr  error
	// drv is set once loading succeeded; atomic so that naming an error
	// never races with a load in progress.
	drv atomic.Pointer[driverAPI]
)

// driver loads and initialises libcuda once per process. It is safe to call
// from any goroutine; the result (or the reason for failure) is cached.
func driver() (*driverAPI, error) {
	drvOnce.Do(func() {
		var d *driverAPI
		if d, drvErr = loadDriver(driverLib); drvErr == nil {
			drv.Store(d)
		}
	})
	return drv.Load(), drvErr
}

// loadedDriver returns the driver if it has already been loaded, without
// triggering a load; error naming uses it.
func loadedDriver() *driverAPI { return drv.Load() }

// loadDriver opens the driver library at path, binds its entry points and
// runs cuInit. Every failure wraps ErrNoDriver.
func loadDriver(path string) (*driverAPI, error) {
	lib, err := dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v; install the NVIDIA driver or run on a GPU machine", ErrNoDriver, err)
	}
	d := new(driverAPI)
	if err := bind(lib, path, symbolsOf(d)); err != nil {
		return nil, fmt.Errorf("%w: %v; the driver is older than CUDA 11.4, update it", ErrNoDriver, err)
	}
	_ = bind(lib, path, []symbol{{"cuGetErrorName", &d.cuGetErrorName}})
	if v := new(vmmAPI); bind(lib, path, symbolsOf(v)) == nil {
		d.vmm = v
	}
	if o := new(orderAPI); bind(lib, path, symbolsOf(o)) == nil {
		d.order = o
	}
	if err := check("cuInit", d.cuInit(0)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDriver, err)
	}
	return d, nil
}

// driverErrorName asks a loaded driver for the name of r; "" when the driver
// is not loaded or does not know the code.
func driverErrorName(r Result) string {
	d := loadedDriver()
	if d == nil || d.cuGetErrorName == nil {
		return ""
	}
	var p *byte
	if d.cuGetErrorName(r, &p) != success {
		return ""
	}
	return goString(p)
}
