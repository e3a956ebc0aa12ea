package telemetry

import (
	"errors"
	"math"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
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

func TestPeak(t *testing.T) {
	d := dgxh200.NewDevice(0)
	setState(d, idleH200())
	got, err := Peak(d)
	if err != nil || math.Abs(got-4814.304) > 1e-9 {
		t.Fatalf("Peak = %v, %v; want 4814.304", got, err)
	}

	d.GetMemoryBusWidthFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	if _, err := Peak(d); !errors.Is(err, ErrNotSupported) {
		t.Errorf("bus width not supported: err = %v, want ErrNotSupported", err)
	}
	d.GetMaxClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
	if _, err := Peak(d); !errors.Is(err, nvml.ERROR_GPU_IS_LOST) || errors.Is(err, ErrNotSupported) {
		t.Errorf("GPU lost: err = %v, want ERROR_GPU_IS_LOST", err)
	}
}

func TestPercentOfPeak(t *testing.T) {
	peak := 4814.304
	d := Device{PeakMemoryBandwidthGBps: &peak}
	// gpu.md: a 1 GiB device copy measured 4.23 TB/s on the H200.
	got, err := d.PercentOfPeak(4230)
	if err != nil || math.Abs(got-87.8631) > 1e-3 {
		t.Errorf("PercentOfPeak(4230) = %v, %v; want 87.863", got, err)
	}
	if _, err := (&Device{Index: 2}).PercentOfPeak(4230); !errors.Is(err, ErrNotSupported) {
		t.Errorf("unknown peak: err = %v, want ErrNotSupported", err)
	}
}
