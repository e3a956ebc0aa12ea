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
// the API names; the symbols are the versioned ones that cuda.h maps them to.
type driverAPI struct {
	cuInit                      func(flags uint32) Result
	cuDriverGetVersion          func(v *int32) Result
	cuDeviceGetCount            func(n *int32) Result
	cuDeviceGet                 func(dev *int32, ordinal int32) Result
	cuDeviceGetName             func(name *byte, n int32, dev int32) Result
	cuDeviceGetAttribute        func(v *int32, attr int32, dev int32) Result
	cuDeviceTotalMem            func(bytes *uint64, dev int32) Result
	cuDevicePrimaryCtxRetain    func(ctx *uintptr, dev int32) Result
	cuDevicePrimaryCtxRelease   func(dev int32) Result
	cuCtxSetCurrent             func(ctx uintptr) Result
	cuCtxSynchronize            func() Result
	cuMemAlloc                  func(p *uint64, n uint64) Result
	cuMemFree                   func(p uint64) Result
	cuMemGetAddressRange        func(base *uint64, size *uint64, p uint64) Result
	cuMemcpyHtoD                func(dst uint64, src unsafe.Pointer, n uint64) Result
	cuMemcpyDtoH                func(dst unsafe.Pointer, src uint64, n uint64) Result
	cuMemcpyDtoD                func(dst, src uint64, n uint64) Result
	cuMemcpyHtoDAsync           func(dst uint64, src unsafe.Pointer, n uint64, s uintptr) Result
	cuMemcpyDtoHAsync           func(dst unsafe.Pointer, src uint64, n uint64, s uintptr) Result
	cuMemcpyDtoDAsync           func(dst, src uint64, n uint64, s uintptr) Result
	cuMemsetD8                  func(p uint64, v uint8, n uint64) Result
	cuMemsetD8Async             func(p uint64, v uint8, n uint64, s uintptr) Result
	cuStreamCreate              func(s *uintptr, flags uint32) Result
	cuStreamDestroy             func(s uintptr) Result
	cuStreamSynchronize         func(s uintptr) Result
	cuEventCreate               func(e *uintptr, flags uint32) Result
	cuEventRecord               func(e, s uintptr) Result
	cuEventSynchronize          func(e uintptr) Result
	cuEventQuery                func(e uintptr) Result
	cuEventElapsedTime          func(ms *float32, start, end uintptr) Result
	cuEventDestroy              func(e uintptr) Result
	cuModuleLoadData            func(m *uintptr, image unsafe.Pointer) Result
	cuModuleUnload              func(m uintptr) Result
	cuModuleGetFunction         func(f *uintptr, m uintptr, name string) Result
	cuLaunchKernel              func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params unsafe.Pointer, extra unsafe.Pointer) Result
	cuStreamBeginCapture        func(s uintptr, mode int32) Result
	cuStreamEndCapture          func(s uintptr, g *uintptr) Result
	cuGraphInstantiateWithFlags func(exec *uintptr, g uintptr, flags uint64) Result
	cuGraphLaunch               func(exec, s uintptr) Result
	cuGraphDestroy              func(g uintptr) Result
	cuGraphExecDestroy          func(exec uintptr) Result
	cuIpcGetMemHandle           func(h *ipcHandle, p uint64) Result
	cuIpcOpenMemHandle          func(p *uint64, h ipcHandle, flags uint32) Result
	cuIpcCloseMemHandle         func(p uint64) Result

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

func (d *driverAPI) symbols() []symbol {
	return []symbol{
		{"cuInit", &d.cuInit},
		{"cuDriverGetVersion", &d.cuDriverGetVersion},
		{"cuDeviceGetCount", &d.cuDeviceGetCount},
		{"cuDeviceGet", &d.cuDeviceGet},
		{"cuDeviceGetName", &d.cuDeviceGetName},
		{"cuDeviceGetAttribute", &d.cuDeviceGetAttribute},
		{"cuDeviceTotalMem_v2", &d.cuDeviceTotalMem},
		{"cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain},
		{"cuDevicePrimaryCtxRelease_v2", &d.cuDevicePrimaryCtxRelease},
		{"cuCtxSetCurrent", &d.cuCtxSetCurrent},
		{"cuCtxSynchronize", &d.cuCtxSynchronize},
		{"cuMemAlloc_v2", &d.cuMemAlloc},
		{"cuMemFree_v2", &d.cuMemFree},
		{"cuMemGetAddressRange_v2", &d.cuMemGetAddressRange},
		{"cuMemcpyHtoD_v2", &d.cuMemcpyHtoD},
		{"cuMemcpyDtoH_v2", &d.cuMemcpyDtoH},
		{"cuMemcpyDtoD_v2", &d.cuMemcpyDtoD},
		{"cuMemcpyHtoDAsync_v2", &d.cuMemcpyHtoDAsync},
		{"cuMemcpyDtoHAsync_v2", &d.cuMemcpyDtoHAsync},
		{"cuMemcpyDtoDAsync_v2", &d.cuMemcpyDtoDAsync},
		{"cuMemsetD8_v2", &d.cuMemsetD8},
		{"cuMemsetD8Async", &d.cuMemsetD8Async},
		{"cuStreamCreate", &d.cuStreamCreate},
		{"cuStreamDestroy_v2", &d.cuStreamDestroy},
		{"cuStreamSynchronize", &d.cuStreamSynchronize},
		{"cuEventCreate", &d.cuEventCreate},
		{"cuEventRecord", &d.cuEventRecord},
		{"cuEventSynchronize", &d.cuEventSynchronize},
		{"cuEventQuery", &d.cuEventQuery},
		{"cuEventElapsedTime", &d.cuEventElapsedTime},
		{"cuEventDestroy_v2", &d.cuEventDestroy},
		{"cuModuleLoadData", &d.cuModuleLoadData},
		{"cuModuleUnload", &d.cuModuleUnload},
		{"cuModuleGetFunction", &d.cuModuleGetFunction},
		{"cuLaunchKernel", &d.cuLaunchKernel},
		{"cuStreamBeginCapture_v2", &d.cuStreamBeginCapture},
		{"cuStreamEndCapture", &d.cuStreamEndCapture},
		{"cuGraphInstantiateWithFlags", &d.cuGraphInstantiateWithFlags},
		{"cuGraphLaunch", &d.cuGraphLaunch},
		{"cuGraphDestroy", &d.cuGraphDestroy},
		{"cuGraphExecDestroy", &d.cuGraphExecDestroy},
		{"cuIpcGetMemHandle", &d.cuIpcGetMemHandle},
		{"cuIpcOpenMemHandle_v2", &d.cuIpcOpenMemHandle},
		{"cuIpcCloseMemHandle", &d.cuIpcCloseMemHandle},
	}
}

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
	if err := bind(lib, path, d.symbols()); err != nil {
		return nil, fmt.Errorf("%w: %v; the driver is older than CUDA 11.4, update it", ErrNoDriver, err)
	}
	_ = bind(lib, path, []symbol{{"cuGetErrorName", &d.cuGetErrorName}})
	if v := new(vmmAPI); bind(lib, path, v.symbols()) == nil {
		d.vmm = v
	}
	if o := new(orderAPI); bind(lib, path, o.symbols()) == nil {
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
