package telemetry

import (
	"math"
	"testing"
)

func TestPeakBandwidthGBps(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mhz, width uint32
		want       float64
	}{
		{"H200 HBM3e", 3201, 6016, 4814.304}, // gpu.md: ≈ 4.81 TB/s
		{"H100 SXM HBM3", 2619, 5120, 3352.32},
		{"zero clock", 0, 6016, 0},
	} {
		if got := PeakBandwidthGBps(tc.mhz, tc.width); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: PeakBandwidthGBps(%d, %d) = %v, want %v", tc.name, tc.mhz, tc.width, got, tc.want)
		}
	}
}
