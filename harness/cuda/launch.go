package cuda

import (
	"fmt"
	"runtime"
)

// Dim3 is a grid or block shape. A zero component counts as 1, so Dim3{X: n}
// is n×1×1.
type Dim3 struct{ X, Y, Z uint32 }

func (d Dim3) norm() Dim3 {
	one := func(v uint32) uint32 { return max(v, 1) }
	return Dim3{one(d.X), one(d.Y), one(d.Z)}
}

// Launch queues the kernel on s (nil: the legacy default stream). args are
// the kernel's parameters in order, each of type Ptr, int32, uint32, int64,
// uint64 or float32, matching the kernel's parameter types exactly: the
// driver takes each value's size from the kernel, not from Go. Launch does
// not wait; a fault shows at the next synchronising call.
func (f *Function) Launch(s *Stream, grid, block Dim3, sharedBytes int, args ...any) error {
	ka, err := packArgs(args)
	if err != nil {
		return fmt.Errorf("launch %s: %w", f.label(), err)
	}
	g, b := grid.norm(), block.norm()
	err = f.dev().call(func(a *driverAPI) error { return f.launch(a, s, g, b, sharedBytes, ka) })
	if err != nil {
		return fmt.Errorf("launch %s grid %v block %v: %w", f.label(), g, b, err)
	}
	return nil
}

// launch is the cuLaunchKernel call, on the device thread.
func (f *Function) launch(a *driverAPI, s *Stream, g, b Dim3, sharedBytes int, ka *kernelArgs) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	r := a.cuLaunchKernel(f.h, g.X, g.Y, g.Z, b.X, b.Y, b.Z, uint32(sharedBytes), s.handle(), ka.params(&pin), nil)
	runtime.KeepAlive(ka)
	return check("cuLaunchKernel", r)
}

func (f *Function) dev() *Device {
	if f == nil {
		return nil
	}
	return f.m.dev()
}

func (f *Function) label() string {
	if f == nil {
		return "<nil kernel>"
	}
	return f.name
}
