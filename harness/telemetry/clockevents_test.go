package telemetry

import (
	"slices"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestClockEventNames(t *testing.T) {
	for _, tc := range []struct {
		mask uint64
		want []string
	}{
		{nvml.ClocksEventReasonNone, nil},
		{nvml.ClocksEventReasonGpuIdle, []string{"gpu_idle"}},
		{nvml.ClocksEventReasonSwPowerCap | nvml.ClocksEventReasonSwThermalSlowdown,
			[]string{"sw_power_cap", "sw_thermal_slowdown"}},
		{nvml.ClocksEventReasonGpuIdle | nvml.ClocksEventReasonApplicationsClocksSetting |
			nvml.ClocksEventReasonSwPowerCap | nvml.ClocksThrottleReasonHwSlowdown |
			nvml.ClocksEventReasonSyncBoost | nvml.ClocksEventReasonSwThermalSlowdown |
			nvml.ClocksThrottleReasonHwThermalSlowdown | nvml.ClocksThrottleReasonHwPowerBrakeSlowdown |
			nvml.ClocksEventReasonDisplayClockSetting,
			[]string{"gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
				"sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake", "display_clock_setting"}},
		{1<<40 | nvml.ClocksThrottleReasonHwSlowdown, []string{"hw_slowdown", "unknown_0x10000000000"}},
	} {
		if got := ClockEventNames(tc.mask); !slices.Equal(got, tc.want) {
			t.Errorf("ClockEventNames(%#x) = %q, want %q", tc.mask, got, tc.want)
		}
	}
}

// Every bit of NVML's "all reasons" mask has a name.
func TestClockEventNamesCoverAllNVMLReasons(t *testing.T) {
	for _, name := range ClockEventNames(nvml.ClocksEventReasonAll) {
		if len(name) > 8 && name[:8] == "unknown_" {
			t.Errorf("NVML reason bit without a name: %s", name)
		}
	}
}
