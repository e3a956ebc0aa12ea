// Package cuda binds the parts of the CUDA driver API and NVRTC that the
// harness needs, through purego: no cgo for CUDA, no CUDA headers and no nvcc
// at build time, so the package builds and its CPU tests run on machines
// without a GPU or a driver (CI included).
//
// libcuda.so.1 is loaded on first use and NVRTC on the first compile. When a
// library is missing every entry point returns an error wrapping
// [ErrNoDriver] (or [ErrNoNVRTC]) that carries the loader's reason, so a
// caller can fall back to host memory or skip a GPU test; [Available] checks
// cheaply.
//
// A CUDA context is current per OS thread, and a stream capture must end on
// the thread that began it. A [Device] therefore owns one goroutine locked to
// one OS thread for its whole life; every driver call of that device is
// marshalled to it through a channel. Methods may be called from any
// goroutine. Each handoff wakes two goroutines, which costs tens of
// microseconds on some virtual machines, so a caller that makes several
// calls in a row (write, launch, record, synchronise) makes them inside
// [Device.Do]: one handoff, then every call runs directly on the device's
// thread, whether made through the [Ctx] or through the ordinary methods.
//
// Kernels are CUDA C with extern "C" entry points, compiled by NVRTC straight
// to a cubin for the device's real architecture (never PTX, which breaks when
// NVRTC is newer than the driver). Cubins are cached by a hash of source,
// options and architecture in memory and on disk, so a second process skips
// NVRTC.
package cuda
