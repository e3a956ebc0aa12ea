package telemetry

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// readDevice reads every field of dev it can; failures become notes.
func readDevice(index int, dev nvml.Device) Device {
	d := Device{Index: index}
	rec := recorder{}

	if v, ret := dev.GetName(); rec.ok("name", ret) {
		d.Name = v
	}
	if v, ret := dev.GetUUID(); rec.ok("uuid", ret) {
		d.UUID = v
	}
	if v, ret := dev.GetPciInfo(); rec.ok("pci_bus_id", ret) {
		d.PCIBusID = busID(v)
	}
	if major, minor, ret := dev.GetCudaComputeCapability(); rec.ok("compute_capability", ret) {
		d.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	}
	if v, ret := dev.GetMemoryInfo(); rec.ok("memory", ret) {
		d.Memory = &Memory{Total: v.Total, Used: v.Used, Free: v.Free}
	}

	d.SMClockMHz = u32(&rec, "sm_clock", func() (uint32, nvml.Return) { return dev.GetClockInfo(nvml.CLOCK_SM) })
	d.MemClockMHz = u32(&rec, "mem_clock", func() (uint32, nvml.Return) { return dev.GetClockInfo(nvml.CLOCK_MEM) })
	d.MaxSMClockMHz = u32(&rec, "max_sm_clock", func() (uint32, nvml.Return) { return dev.GetMaxClockInfo(nvml.CLOCK_SM) })
	d.MaxMemClockMHz = u32(&rec, "max_mem_clock", func() (uint32, nvml.Return) { return dev.GetMaxClockInfo(nvml.CLOCK_MEM) })
	d.MemoryBusWidthBits = u32(&rec, "memory_bus_width", dev.GetMemoryBusWidth)
	if d.MaxMemClockMHz != nil && d.MemoryBusWidthBits != nil {
		peak := PeakBandwidthGBps(*d.MaxMemClockMHz, *d.MemoryBusWidthBits)
		d.PeakMemoryBandwidthGBps = &peak
	}

	d.TemperatureC = u32(&rec, "temperature", func() (uint32, nvml.Return) { return dev.GetTemperature(nvml.TEMPERATURE_GPU) })
	d.PowerW = watts(u32(&rec, "power_usage", dev.GetPowerUsage))
	d.PowerLimitW = watts(u32(&rec, "power_limit", dev.GetEnforcedPowerLimit))
	if v, ret := dev.GetPerformanceState(); rec.ok("performance_state", ret) {
		if v == nvml.PSTATE_UNKNOWN {
			rec.notes = append(rec.notes, "performance_state: unknown")
		} else {
			d.PerformanceState = fmt.Sprintf("P%d", int32(v))
		}
	}
	if v, ret := dev.GetCurrentClocksEventReasons(); rec.ok("clock_events", ret) {
		d.ClockEventMask = &v
		d.ClockEvents = ClockEventNames(v)
	}
	if v, ret := dev.GetCurrPcieLinkGeneration(); rec.ok("pcie_gen", ret) {
		d.PCIeGen = &v
	}
	if v, ret := dev.GetCurrPcieLinkWidth(); rec.ok("pcie_width", ret) {
		d.PCIeWidth = &v
	}

	d.Notes = rec.notes
	return d
}

// u32 calls get and returns its value, or nil with a note.
func u32(rec *recorder, field string, get func() (uint32, nvml.Return)) *uint32 {
	v, ret := get()
	if !rec.ok(field, ret) {
		return nil
	}
	return &v
}

// watts converts NVML milliwatts to watts.
func watts(mW *uint32) *float64 {
	if mW == nil {
		return nil
	}
	w := float64(*mW) / 1000
	return &w
}

// busID returns the NUL-terminated PCI bus id ("00000000:19:00.0"),
// falling back to the legacy 16-byte field.
func busID(p nvml.PciInfo) string {
	if s := cString(p.BusId[:]); s != "" {
		return s
	}
	return cString(p.BusIdLegacy[:])
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
