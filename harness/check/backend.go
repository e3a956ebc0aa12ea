package check

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/pool/cudapool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// CUDA is the device backend: arenas in GPU memory, shared with the
// plugin by file descriptor when it maps them so (its Describe said
// cuda_fd_arenas), by IPC handle otherwise; diffed on the GPU.
type CUDA struct{ Dev *cuda.Device }

// NewMemory implements Backend.
func (c CUDA) NewMemory(dir *pool.Dir, size int, p *plugin.Plugin) (pool.Memory, error) {
	path := ""
	if dir != nil {
		path = dir.Path
	}
	return cudapool.New(c.Dev, size, SharingFor(p), path)
}

// SharingFor is how a CUDA arena is shared with p: by file descriptor when
// p maps one and cudapool.SharingEnv does not say "ipc". It goes by p's
// last Describe, which every target (store, read, transfer) and the bench
// runner make before they plan an arena; a plugin not yet described gets
// IPC, which every SDK maps.
func SharingFor(p *plugin.Plugin) cudapool.Sharing {
	if p != nil && p.MapsFDArenas() && os.Getenv(cudapool.SharingEnv) != "ipc" {
		return cudapool.FD
	}
	return cudapool.IPC
}

// ErrBackend marks a backend that was asked for and cannot be had: a usage
// error, not a plugin fault.
var ErrBackend = errors.New("backend unavailable")

// Backends are the values of --backend.
var Backends = []string{"auto", "cpu", "cuda"}

// ChooseBackend resolves a --backend value. "auto" takes CUDA when a
// driver and a device are present and the plugin serves that backend,
// host shared memory otherwise; "cuda" insists. The returned close
// function releases the device.
func ChooseBackend(name string, device int, served []kvpb.Backend) (Backend, string, func(), error) {
	none := func() {}
	cpuOK := slices.Contains(served, kvpb.Backend_BACKEND_SHM)
	serves := slices.Contains(served, kvpb.Backend_BACKEND_CUDA)
	switch name {
	case "cpu":
		if !cpuOK {
			return nil, "", none, fmt.Errorf("%w: --backend cpu: the plugin has no CPU kernel (it serves %v)", ErrBackend, served)
		}
		return SHM{}, "cpu", none, nil
	case "auto", "cuda":
	default:
		return nil, "", none, fmt.Errorf("%w: --backend %q: want auto, cpu or cuda", ErrBackend, name)
	}
	err := cuda.Available()
	switch {
	case name == "auto" && (err != nil || !serves) && !cpuOK:
		return nil, "", none, fmt.Errorf("%w: the plugin serves only %v and this machine has no usable GPU (%v)", ErrBackend, served, err)
	case name == "auto" && (err != nil || !serves):
		return SHM{}, "cpu", none, nil
	case err != nil:
		return nil, "", none, fmt.Errorf("%w: --backend cuda: %v; use --backend cpu on this machine", ErrBackend, err)
	case !serves:
		return nil, "", none, fmt.Errorf("%w: --backend cuda: the plugin has no CUDA kernel (it serves %v)", ErrBackend, served)
	}
	dev, err := cuda.Open(device)
	if err != nil {
		return nil, "", none, fmt.Errorf("%w: --backend cuda: %v", ErrBackend, err)
	}
	return CUDA{Dev: dev}, "cuda:" + dev.Name(), func() { dev.Close() }, nil
}
