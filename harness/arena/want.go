package arena

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol"
)

// Wanted is the backend a run asks for.
type Wanted int

// The backends a run may ask for.
const (
	// WantAuto takes the GPU when a driver and a device are here and the
	// plugin serves the cuda backend, host shared memory otherwise.
	WantAuto Wanted = iota
	// WantCPU insists on host shared memory.
	WantCPU
	// WantCUDA insists on GPU memory.
	WantCUDA
)

// Backends are the values of --backend, in Wanted order.
var Backends = []string{"auto", "cpu", "cuda"}

func (w Wanted) String() string {
	if w >= 0 && int(w) < len(Backends) {
		return Backends[w]
	}
	return fmt.Sprintf("Wanted(%d)", int(w))
}

// Want is where a run asks its arenas to live: the one reading of the
// --backend and --device flags (ParseWant), passed down as it is and
// resolved against a plugin by Choose. No other code reads the flags'
// strings or picks a backend of its own.
type Want struct {
	Backend Wanted
	Device  int // the CUDA device ordinal
}

// ErrBackend marks a backend that was asked for and cannot be had: a usage
// error, not a plugin fault.
var ErrBackend = errors.New("backend unavailable")

// ErrNoBackend is returned by a target whose config names no backend: a
// caller's mistake (a run's Want.Choose gives one; tests name SHM{}).
var ErrNoBackend = errors.New("no arena backend given: pass the run's backend (arena.SHM{} for host shared memory)")

// ParseWant reads --backend and --device.
func ParseWant(name string, device int) (Want, error) {
	i := slices.Index(Backends, name)
	switch {
	case i < 0:
		return Want{}, fmt.Errorf("--backend %q: want auto, cpu or cuda", name)
	case device < 0:
		return Want{}, fmt.Errorf("--device %d: want a CUDA device ordinal, 0 or more", device)
	}
	return Want{Backend: Wanted(i), Device: device}, nil
}

// MayUseGPU reports whether a run with this want will put its arenas on a
// GPU when its plugin serves one: cuda, or auto on a machine with a
// usable driver and device.
func (w Want) MayUseGPU() bool {
	switch w.Backend {
	case WantCUDA:
		return true
	case WantAuto:
		return cuda.Available() == nil
	}
	return false
}

// Choose resolves the want for a plugin that serves the given backends.
// The returned function releases the device.
func (w Want) Choose(served []protocol.Backend) (Backend, func(), error) {
	none := func() {}
	cpuOK := slices.Contains(served, protocol.BackendSHM)
	serves := slices.Contains(served, protocol.BackendCUDA)
	switch w.Backend {
	case WantCPU:
		if !cpuOK {
			return nil, none, fmt.Errorf("%w: --backend cpu: the plugin has no CPU kernel (it serves %v)", ErrBackend, served)
		}
		return SHM{}, none, nil
	case WantAuto, WantCUDA:
	default:
		return nil, none, fmt.Errorf("%w: backend %v: want auto, cpu or cuda", ErrBackend, w.Backend)
	}
	err := cuda.Available()
	auto := w.Backend == WantAuto
	switch {
	case auto && (err != nil || !serves) && !cpuOK:
		return nil, none, fmt.Errorf("%w: the plugin serves only %v and this machine has no usable GPU (%v)", ErrBackend, served, err)
	case auto && (err != nil || !serves):
		return SHM{}, none, nil
	case err != nil:
		return nil, none, fmt.Errorf("%w: --backend cuda: %v; use --backend cpu on this machine", ErrBackend, err)
	case !serves:
		return nil, none, fmt.Errorf("%w: --backend cuda: the plugin has no CUDA kernel (it serves %v)", ErrBackend, served)
	}
	dev, err := cuda.Open(w.Device)
	if err != nil {
		return nil, none, fmt.Errorf("%w: --backend cuda: %v", ErrBackend, err)
	}
	return CUDA{Dev: dev}, func() { dev.Close() }, nil
}
