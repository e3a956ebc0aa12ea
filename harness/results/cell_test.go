package results

import (
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/measure"
)

func TestDerive(t *testing.T) {
	c := Cell{Identity: Identity{Tokens: 4096, Kernel: "store"}, Summary: measure.Summary{N: 1, P50: 10_000},
		BytesPerLaunch: 30_000_000, PeakGBps: 4800, CopyNs: 8_000, CopyGBps: 3750}
	if err := c.Derive(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"TokensPerSec", c.TokensPerSec, 4096 / 10e-6},
		{"GBps", c.GBps, 3000},
		{"PctOfPeak", c.PctOfPeak, 62.5},
		{"CopyRatio", c.CopyRatio, 1.25}, // times only: the copy's rate is over other bytes
	} {
		if math.Abs(tc.got-tc.want) > 1e-9*tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestDeriveLeavesMissingRatesZero(t *testing.T) {
	c := Cell{Identity: Identity{Tokens: 1, Kernel: "store"}, Summary: measure.Summary{N: 1, P50: 1}}
	if err := c.Derive(); err != nil || c.GBps != 0 || c.PctOfPeak != 0 || c.CopyRatio != 0 {
		t.Errorf("Derive without bytes, peak or copy: err %v, cell %+v", err, c)
	}
	c.Summary.P50 = 0
	if err := c.Derive(); err == nil {
		t.Error("Derive with a zero median time succeeded")
	}
}

func TestCellValidate(t *testing.T) {
	c := testCell(t, "p", 16, 20, 1000)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Samples = c.Samples[:5]
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "5 raw samples but summary.n = 20") {
		t.Errorf("Validate with 5 of 20 samples = %v", err)
	}
	c.Summary.N = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("Validate with N = 0: %v", err)
	}
}

func TestLocalEnv(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := LocalEnv(now)
	if e.GOOS != runtime.GOOS || e.GOARCH != runtime.GOARCH || e.GoVersion != runtime.Version() || !e.Time.Equal(now) {
		t.Errorf("LocalEnv = %+v, want this process's GOOS, GOARCH, Go version and the given time", e)
	}
}
