package telemetry

// Snapshot is the state of the machine's NVIDIA GPUs at one moment.
type Snapshot struct {
	// DriverVersion is the kernel driver version, e.g. "580.159.04".
	DriverVersion string `json:"driver_version,omitempty"`
	// CUDADriverVersion is the CUDA version the driver supports, e.g. "13.0".
	CUDADriverVersion string `json:"cuda_driver_version,omitempty"`
	// Devices are ordered by NVML index.
	Devices []Device `json:"devices"`
	// Notes name system-level fields NVML could not answer, as
	// "field: reason".
	Notes []string `json:"notes,omitempty"`
}

// Device is one GPU. A nil pointer or empty string means NVML did not
// answer that field; Notes says why.
type Device struct {
	Index             int    `json:"index"`
	Name              string `json:"name,omitempty"`
	UUID              string `json:"uuid,omitempty"`
	PCIBusID          string `json:"pci_bus_id,omitempty"`
	ComputeCapability string `json:"compute_capability,omitempty"` // "9.0"

	Memory *Memory `json:"memory,omitempty"`

	SMClockMHz     *uint32 `json:"sm_clock_mhz,omitempty"`
	MemClockMHz    *uint32 `json:"mem_clock_mhz,omitempty"`
	MaxSMClockMHz  *uint32 `json:"max_sm_clock_mhz,omitempty"`
	MaxMemClockMHz *uint32 `json:"max_mem_clock_mhz,omitempty"`

	MemoryBusWidthBits *uint32 `json:"memory_bus_width_bits,omitempty"`
	// PeakMemoryBandwidthGBps is derived from MaxMemClockMHz and
	// MemoryBusWidthBits by [PeakBandwidthGBps]; nil when either is.
	PeakMemoryBandwidthGBps *float64 `json:"peak_memory_bandwidth_gbps,omitempty"`

	TemperatureC *uint32  `json:"temperature_c,omitempty"`
	PowerW       *float64 `json:"power_w,omitempty"`
	PowerLimitW  *float64 `json:"power_limit_w,omitempty"` // enforced limit
	// PerformanceState is "P0" (fastest) to "P15".
	PerformanceState string `json:"performance_state,omitempty"`

	// ClockEventMask is NVML's current clock-event (throttle) reason mask;
	// 0 means clocks are not held back. ClockEvents decodes it with
	// [ClockEventNames].
	ClockEventMask *uint64  `json:"clock_event_mask,omitempty"`
	ClockEvents    []string `json:"clock_events,omitempty"`

	PCIeGen   *int `json:"pcie_gen,omitempty"`
	PCIeWidth *int `json:"pcie_width,omitempty"`

	// Notes name the fields left empty, as "field: not supported" or
	// "field: <NVML error>".
	Notes []string `json:"notes,omitempty"`
}

// Memory is device memory in bytes, as NVML's v1 memory info reports it
// (Used includes memory the driver reserves).
type Memory struct {
	Total uint64 `json:"total"`
	Used  uint64 `json:"used"`
	Free  uint64 `json:"free"`
}
