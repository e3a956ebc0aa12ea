package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestCollectH200(t *testing.T) {
	s := newH200(t)
	snap, err := Collect(s)
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	if n := len(s.InitCalls()); n != 1 {
		t.Errorf("Init called %d times, want 1", n)
	}
	if n := len(s.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown called %d times, want 1", n)
	}
	if snap.DriverVersion != "550.54.15" || snap.CUDADriverVersion != "12.4" {
		t.Errorf("versions = %q, CUDA %q; want 550.54.15, CUDA 12.4", snap.DriverVersion, snap.CUDADriverVersion)
	}
	if len(snap.Notes) != 0 {
		t.Errorf("snapshot notes = %q, want none", snap.Notes)
	}
	if len(snap.Devices) != 8 {
		t.Fatalf("got %d devices, want 8", len(snap.Devices))
	}
	for i, d := range snap.Devices {
		if d.Index != i {
			t.Errorf("device %d has Index %d", i, d.Index)
		}
		if d.Name != "NVIDIA H200 141GB HBM3e" {
			t.Errorf("device %d name %q", i, d.Name)
		}
		if want := fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", i); d.UUID != want {
			t.Errorf("device %d UUID %q, want %q", i, d.UUID, want)
		}
		if want := fmt.Sprintf("0000:%02x:00.0", i); d.PCIBusID != want {
			t.Errorf("device %d PCI bus id %q, want %q", i, d.PCIBusID, want)
		}
		if len(d.Notes) != 0 {
			t.Errorf("device %d notes = %q, want none", i, d.Notes)
		}
	}

	d := snap.Devices[3]
	want := Memory{Total: 151397597184, Used: gib / 2, Free: 151397597184 - gib/2}
	if d.Memory == nil || *d.Memory != want {
		t.Errorf("memory = %+v, want %+v", d.Memory, want)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"compute capability", d.ComputeCapability, "9.0"},
		{"sm clock", deref(d.SMClockMHz), uint32(345)},
		{"mem clock", deref(d.MemClockMHz), uint32(3201)},
		{"max sm clock", deref(d.MaxSMClockMHz), uint32(1980)},
		{"max mem clock", deref(d.MaxMemClockMHz), uint32(3201)},
		{"bus width", deref(d.MemoryBusWidthBits), uint32(6016)},
		{"temperature", deref(d.TemperatureC), uint32(31)},
		{"power", deref(d.PowerW), 74.512},
		{"power limit", deref(d.PowerLimitW), 700.0},
		{"pstate", d.PerformanceState, "P0"},
		{"event mask", deref(d.ClockEventMask), uint64(1)},
		{"events", strings.Join(d.ClockEvents, ","), "gpu_idle"},
		{"pcie gen", deref(d.PCIeGen), 5},
		{"pcie width", deref(d.PCIeWidth), 16},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// gpu.md: 3201 MHz × 6016 bit × 2 / 8 ≈ 4.81 TB/s.
	if d.PeakMemoryBandwidthGBps == nil || math.Abs(*d.PeakMemoryBandwidthGBps-4814.304) > 1e-6 {
		t.Errorf("peak = %v GB/s, want 4814.304", deref(d.PeakMemoryBandwidthGBps))
	}
}

func TestCollectMakesNoCallAfterFailedInit(t *testing.T) {
	for _, tc := range []struct {
		ret    nvml.Return
		reason string
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, "NVML library not found: no NVIDIA driver on this machine"},
		{nvml.ERROR_DRIVER_NOT_LOADED, "NVIDIA kernel driver is not loaded"},
		{nvml.ERROR_NO_PERMISSION, "no permission"},
		{nvml.ERROR_UNKNOWN, "NVML Init failed with return code 999"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			lib := newDeadLibrary(t, tc.ret)
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("NVML call after failed Init: %v", r)
				}
			}()
			snap, err := Collect(lib)
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if snap != nil {
				t.Errorf("snapshot = %+v, want nil", snap)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("err = %q, want it to contain %q", err, tc.reason)
			}
			if lib.inits != 1 {
				t.Errorf("Init called %d times, want 1", lib.inits)
			}
		})
	}
}

// The dead library's guard must really trip: its unlisted methods panic.
func TestDeadLibraryPanicsOnOtherCalls(t *testing.T) {
	lib := newDeadLibrary(t, nvml.ERROR_LIBRARY_NOT_FOUND)
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("GetExcludedDeviceCount on the dead library did not panic")
		}
	}()
	lib.GetExcludedDeviceCount()
}

func TestCollectNotSupportedLeavesFieldEmpty(t *testing.T) {
	s := newH200(t)
	d := device(t, s, 3)
	unsupported := func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetMemoryBusWidthFunc = unsupported
	d.GetPowerUsageFunc = unsupported
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetCudaComputeCapabilityFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }

	snap, err := Collect(s)
	if err != nil {
		t.Fatalf("Collect: %v (NOT_SUPPORTED must not fail the snapshot)", err)
	}
	got := snap.Devices[3]
	if got.MemoryBusWidthBits != nil || got.PeakMemoryBandwidthGBps != nil || got.PowerW != nil ||
		got.ClockEventMask != nil || got.ClockEvents != nil || got.ComputeCapability != "" || got.PCIeWidth != nil {
		t.Errorf("unsupported fields were filled: %+v", got)
	}
	wantNotes := []string{
		"compute_capability: not supported",
		"memory_bus_width: not supported",
		"power_usage: not supported",
		"clock_events: not supported",
		"pcie_width: not supported",
	}
	if !slices.Equal(got.Notes, wantNotes) {
		t.Errorf("notes = %q, want %q", got.Notes, wantNotes)
	}
	// The rest of the device and the other devices are untouched.
	if got.Name == "" || got.MaxMemClockMHz == nil || got.PowerLimitW == nil || got.PCIeGen == nil {
		t.Errorf("supported fields of device 3 missing: %+v", got)
	}
	if other := snap.Devices[4]; other.PeakMemoryBandwidthGBps == nil || len(other.Notes) != 0 {
		t.Errorf("device 4 affected by device 3: %+v", other)
	}
	js, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"memory_bus_width_bits", "peak_memory_bandwidth_gbps", "power_w", "clock_event_mask"} {
		if strings.Contains(string(js), `"`+key+`"`) {
			t.Errorf("JSON has %q for an unsupported field: %s", key, js)
		}
	}
}

func TestCollectNotesOtherFieldErrors(t *testing.T) {
	s := newH200(t)
	d := device(t, s, 1)
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NO_PERMISSION }
	d.GetPerformanceStateFunc = func() (nvml.Pstates, nvml.Return) { return nvml.PSTATE_UNKNOWN, nvml.SUCCESS }
	s.SystemGetCudaDriverVersionFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_FUNCTION_NOT_FOUND }

	snap, err := Collect(s)
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	got := snap.Devices[1]
	if got.PowerLimitW != nil || got.PerformanceState != "" {
		t.Errorf("power limit %v, pstate %q; want both empty", got.PowerLimitW, got.PerformanceState)
	}
	wantNotes := []string{"power_limit: ERROR_NO_PERMISSION", "performance_state: unknown"}
	if !slices.Equal(got.Notes, wantNotes) {
		t.Errorf("notes = %q, want %q", got.Notes, wantNotes)
	}
	if snap.CUDADriverVersion != "" || !slices.Equal(snap.Notes, []string{"cuda_driver_version: ERROR_FUNCTION_NOT_FOUND"}) {
		t.Errorf("CUDA version %q, notes %q", snap.CUDADriverVersion, snap.Notes)
	}
}

func TestCollectFailsWhenDevicesCannotBeOpened(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		s := newH200(t)
		s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
		snap, err := Collect(s)
		if snap != nil || !errors.Is(err, nvml.ERROR_UNKNOWN) || errors.Is(err, ErrUnavailable) {
			t.Errorf("snap %v, err %v; want nil and an ERROR_UNKNOWN that is not ErrUnavailable", snap, err)
		}
		if n := len(s.ShutdownCalls()); n != 1 {
			t.Errorf("Shutdown called %d times after a failure, want 1", n)
		}
	})
	t.Run("handle", func(t *testing.T) {
		s := newH200(t)
		s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
			if i == 6 {
				return nil, nvml.ERROR_GPU_IS_LOST
			}
			return s.Devices[i], nvml.SUCCESS
		}
		snap, err := Collect(s)
		if snap != nil || !errors.Is(err, nvml.ERROR_GPU_IS_LOST) || !strings.Contains(err.Error(), "GPU 6") {
			t.Errorf("snap %v, err %v; want nil and a GPU_IS_LOST naming GPU 6", snap, err)
		}
		if n := len(s.ShutdownCalls()); n != 1 {
			t.Errorf("Shutdown called %d times after a failure, want 1", n)
		}
	})
}

func TestCollectNotesShutdownFailure(t *testing.T) {
	s := newH200(t)
	s.ShutdownFunc = func() nvml.Return { return nvml.ERROR_UNINITIALIZED }
	snap, err := Collect(s)
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	if len(snap.Devices) != 8 || !slices.Equal(snap.Notes, []string{"nvml_shutdown: ERROR_UNINITIALIZED"}) {
		t.Errorf("devices %d, notes %q", len(snap.Devices), snap.Notes)
	}
}

func TestCUDAVersion(t *testing.T) {
	for v, want := range map[int]string{12040: "12.4", 13000: "13.0", 11080: "11.8", 12090: "12.9"} {
		if got := cudaVersion(v); got != want {
			t.Errorf("cudaVersion(%d) = %q, want %q", v, got, want)
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
