package cuda

import (
	"errors"
	"strings"
	"testing"
)

// TestLoadDriverMissing checks the loader's failure on any machine: a library
// that does not exist gives ErrNoDriver with the loader's reason.
func TestLoadDriverMissing(t *testing.T) {
	const name = "libcuda-kvharness-missing.so.1"
	_, err := loadDriver(name)
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("loadDriver(%q) = %v; want an error wrapping ErrNoDriver", name, err)
	}
	if !strings.Contains(err.Error(), name) {
		t.Errorf("error %q does not name the library that failed to load", err)
	}
}

func TestLoadNVRTCMissing(t *testing.T) {
	names := []string{"/nonexistent/libnvrtc.so", "libnvrtc-kvharness-missing.so.99"}
	_, err := loadNVRTC(names)
	if !errors.Is(err, ErrNoNVRTC) {
		t.Fatalf("loadNVRTC = %v; want an error wrapping ErrNoNVRTC", err)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not mention candidate %s", err, n)
		}
	}
}

// TestNoDriverEntryPoints calls every entry point that needs no device (and
// the methods of nil handles) on a machine without a driver: each must
// return an error wrapping ErrNoDriver, never panic.
func TestNoDriverEntryPoints(t *testing.T) {
	if Available() == nil {
		t.Skip("a CUDA driver is present; TestLoadDriverMissing covers the failure path")
	}
	var (
		d  *Device
		s  *Stream
		e  *Event
		m  *Module
		f  *Function
		g  *Graph
		gx *GraphExec
	)
	buf := make([]byte, 8)
	calls := map[string]func() error{
		"Available":         Available,
		"DeviceCount":       func() error { _, err := DeviceCount(); return err },
		"DriverVersion":     func() error { _, err := DriverVersion(); return err },
		"Open":              func() error { _, err := Open(0); return err },
		"Close":             d.Close,
		"Sync":              d.Sync,
		"Do":                func() error { return d.Do(func(*Ctx) error { return nil }) },
		"Alloc":             func() error { _, err := d.Alloc(64); return err },
		"Free":              func() error { return d.Free(1) },
		"HtoD":              func() error { return d.HtoD(1, buf) },
		"HtoD empty":        func() error { return d.HtoD(1, nil) },
		"DtoH":              func() error { return d.DtoH(buf, 1) },
		"DtoD":              func() error { return d.DtoD(1, 2, 8) },
		"Memset8":           func() error { return d.Memset8(1, 0, 8) },
		"NewStream":         func() error { _, err := d.NewStream(); return err },
		"NewEvent":          func() error { _, err := d.NewEvent(); return err },
		"Compile":           func() error { _, err := d.Compile("k", "extern \"C\" __global__ void k() {}"); return err },
		"IpcHandle":         func() error { _, err := d.IpcHandle(1); return err },
		"IpcOpen":           func() error { _, err := d.IpcOpen([64]byte{}); return err },
		"IpcClose":          func() error { return d.IpcClose(1) },
		"AllocShared":       func() error { _, err := d.AllocShared(64); return err },
		"ImportShared":      func() error { _, err := d.ImportShared(3, 1<<21); return err },
		"Shared.ExportFD":   func() error { _, err := (*Shared)(nil).ExportFD(); return err },
		"Stream.Sync":       s.Sync,
		"Stream.Destroy":    s.Destroy,
		"HtoDAsync":         func() error { return s.HtoDAsync(1, buf) },
		"DtoHAsync":         func() error { return s.DtoHAsync(buf, 1) },
		"DtoDAsync":         func() error { return s.DtoDAsync(1, 2, 8) },
		"Memset8Async":      func() error { return s.Memset8Async(1, 0, 8) },
		"BeginCapture":      s.BeginCapture,
		"EndCapture":        func() error { _, err := s.EndCapture(); return err },
		"Event.Record":      func() error { return e.Record(nil) },
		"Event.Sync":        e.Sync,
		"Event.Destroy":     e.Destroy,
		"Elapsed":           func() error { _, err := Elapsed(e, e); return err },
		"Function":          func() error { _, err := m.Function("k"); return err },
		"Unload":            m.Unload,
		"Launch":            func() error { return f.Launch(nil, Dim3{X: 1}, Dim3{X: 1}, 0, Ptr(1), int32(2)) },
		"Instantiate":       func() error { _, err := g.Instantiate(); return err },
		"Graph.Destroy":     g.Destroy,
		"GraphExec.Launch":  func() error { return gx.Launch(nil) },
		"GraphExec.Destroy": gx.Destroy,
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrNoDriver) {
			t.Errorf("%s without a driver = %v; want an error wrapping ErrNoDriver", name, err)
		}
	}
	err := Available()
	if !strings.Contains(err.Error(), driverLib) {
		t.Errorf("Available() = %q; want the loader's reason naming %s", err, driverLib)
	}
}

// TestNVRTCVersion: either NVRTC loads and reports a plausible
// version, or the error says ErrNoNVRTC.
func TestNVRTCVersion(t *testing.T) {
	major, minor, err := NVRTCVersion()
	if err != nil {
		if !errors.Is(err, ErrNoNVRTC) {
			t.Fatalf("NVRTCVersion error %v does not wrap ErrNoNVRTC", err)
		}
		return
	}
	if major < 11 {
		t.Errorf("NVRTCVersion = %d.%d; want 11 or later", major, minor)
	}
	t.Logf("NVRTC %d.%d", major, minor)
}
