package telemetry

import (
	"fmt"
	"math/bits"
)

// clockEventNames maps NVML clock-event (formerly "throttle") reason bits
// (nvmlClocksEventReason* in nvml.h) to names.
var clockEventNames = map[uint64]string{
	0x001: "gpu_idle",
	0x002: "applications_clocks_setting",
	0x004: "sw_power_cap",
	0x008: "hw_slowdown",
	0x010: "sync_boost",
	0x020: "sw_thermal_slowdown",
	0x040: "hw_thermal_slowdown",
	0x080: "hw_power_brake",
	0x100: "display_clock_setting",
	0x200: "board_limit",
	0x400: "reliability",
}

// ClockEventNames decodes an NVML clock-event reason mask into names, in
// bit order; a bit NVML may add later comes out as "unknown_0x...". A zero
// mask (clocks not held back) gives nil.
func ClockEventNames(mask uint64) []string {
	var names []string
	for mask != 0 {
		bit := uint64(1) << bits.TrailingZeros64(mask)
		mask &^= bit
		name, ok := clockEventNames[bit]
		if !ok {
			name = fmt.Sprintf("unknown_%#x", bit)
		}
		names = append(names, name)
	}
	return names
}
