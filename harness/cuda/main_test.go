package cuda

import (
	"os"
	"testing"
)

// TestMain points the cubin cache at a fresh directory, so GPU tests measure
// a real NVRTC compile and never read or litter the user's cache.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kvharness-cubin-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv(CacheDirEnv, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// openDevice opens GPU 0 or skips the test on a machine without CUDA.
func openDevice(t testing.TB) *Device {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("no CUDA driver (%v): run ./scripts/gpu-test on a GPU machine", err)
	}
	d, err := Open(0)
	if err != nil {
		t.Fatalf("Open(0): %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// alloc allocates n bytes freed at the end of the test.
func alloc(t testing.TB, d *Device, n int) Ptr {
	t.Helper()
	p, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Free(p) })
	return p
}

// newHandle is create (d.NewStream, d.NewEvent) for a test: fatal on
// failure, destroyed at cleanup.
func newHandle[H interface{ Destroy() error }](t testing.TB, create func() (H, error)) H {
	t.Helper()
	h, err := create()
	must(t, err)
	t.Cleanup(func() { h.Destroy() })
	return h
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
