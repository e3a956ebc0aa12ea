package telemetry

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNotSupported reports that NVML does not answer a field this device
// needs, so the value cannot be given.
var ErrNotSupported = errors.New("not supported by this GPU or driver")

// PeakBandwidthGBps is the theoretical peak memory bandwidth in GB/s
// (10^9 bytes per second):
//
//	max memory clock (MHz) × 10^6 × bus width (bits) × 2 / 8 / 10^9
//
// The ×2 is for double data rate: NVML reports the memory clock, and HBM
// and GDDR move data on both clock edges. /8 turns bits into bytes. For the
// H200 (3201 MHz, 6016-bit) this is 4814.3 GB/s, the datasheet's 4.8 TB/s.
func PeakBandwidthGBps(maxMemClockMHz, busWidthBits uint32) float64 {
	return float64(maxMemClockMHz) * float64(busWidthBits) * 2 / 8 / 1000
}

// Peak reads dev's max memory clock and bus width and returns its peak
// memory bandwidth in GB/s (see [PeakBandwidthGBps]). The caller must hold
// a successful Init of the library dev came from.
func Peak(dev nvml.Device) (float64, error) {
	clock, ret := dev.GetMaxClockInfo(nvml.CLOCK_MEM)
	if err := peakInput("max memory clock", ret); err != nil {
		return 0, err
	}
	width, ret := dev.GetMemoryBusWidth()
	if err := peakInput("memory bus width", ret); err != nil {
		return 0, err
	}
	return PeakBandwidthGBps(clock, width), nil
}

func peakInput(what string, ret nvml.Return) error {
	switch ret {
	case nvml.SUCCESS:
		return nil
	case nvml.ERROR_NOT_SUPPORTED:
		return fmt.Errorf("telemetry: peak bandwidth needs the %s: %w; report bandwidth without %% of peak", what, ErrNotSupported)
	default:
		return fmt.Errorf("telemetry: peak bandwidth: read %s: %w", what, ret)
	}
}

// PercentOfPeak returns achievedGBps as a percentage of d's peak memory
// bandwidth, or an error wrapping [ErrNotSupported] when the peak is unknown.
func (d *Device) PercentOfPeak(achievedGBps float64) (float64, error) {
	if d.PeakMemoryBandwidthGBps == nil || *d.PeakMemoryBandwidthGBps == 0 {
		return 0, fmt.Errorf("telemetry: GPU %d peak memory bandwidth: %w; report bandwidth without %% of peak", d.Index, ErrNotSupported)
	}
	return 100 * achievedGBps / *d.PeakMemoryBandwidthGBps, nil
}
