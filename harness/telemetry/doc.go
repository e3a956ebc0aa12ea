// Package telemetry reads GPU state through NVML for `kvharness gpu` and for
// benchmark records: driver and CUDA versions and, per device, identity,
// memory, clocks, memory bus width and the peak memory bandwidth derived
// from it, temperature, power, performance state, clock-event (throttle)
// reasons and the PCIe link.
//
// All code goes through [nvml.Interface], never the go-nvml package-level
// functions, so tests run on a CPU-only machine against the go-nvml mocks
// (pkg/nvml/mock/dgxh200). [NewLibrary] returns the real library.
//
// NVML safety: on a machine without the NVIDIA driver, Init fails with
// ERROR_LIBRARY_NOT_FOUND, and any NVML call after that kills the process
// (symbol lookup error, exit 127). [Collect] therefore makes no call at all
// after a failed Init — not even Shutdown or ErrorString — and reports
// [ErrUnavailable] instead.
//
// A field NVML answers ERROR_NOT_SUPPORTED (or any other per-field error)
// for is left empty (nil pointer, empty string) and noted in the device's
// Notes; it never fails the snapshot.
//
// go-nvml needs cgo; build with CGO_ENABLED=1. Building needs no driver:
// libnvidia-ml.so.1 is opened only inside Init.
package telemetry
