// Package cudatest opens a GPU for tests, or skips them with the command
// that runs them where there is one.
package cudatest

import (
	"testing"

	"github.com/kvharness/kvharness/harness/cuda"
)

// Skip is the message a GPU test skips with on a machine without CUDA.
const Skip = "no CUDA driver (%v): run ./scripts/gpu-test on a GPU machine"

// Device opens GPU 0, closed when the test ends, or skips the test.
func Device(t testing.TB) *cuda.Device {
	t.Helper()
	if err := cuda.Available(); err != nil {
		t.Skipf(Skip, err)
	}
	d, err := cuda.Open(0)
	if err != nil {
		t.Fatalf("cuda.Open(0): %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
