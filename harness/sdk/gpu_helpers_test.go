package sdk_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/fdpass"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/rundir"
)

// openDevice opens GPU 0, or skips the test on a machine without CUDA.
func openDevice(t testing.TB) *cuda.Device { return cudatest.Device(t) }

// startPlugin runs a bundled plugin in a child process (this test binary,
// see TestMain).
func startPlugin(t testing.TB, name string) *plugin.Plugin {
	t.Helper()
	dir, err := rundir.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	p, err := plugin.Start(context.Background(), name, os.Args[0], plugin.Options{
		Dir: dir, Env: []string{serveEnv + "=" + name}, Args: []string{"-test.run=^$", "-test.bench=^$"},
		CallTimeout: 3 * time.Minute})
	if err != nil {
		t.Fatalf("start plugin %s: %v", name, err)
	}
	t.Cleanup(p.Close)
	return p
}

// gpuArena is a harness arena in device memory: VMM memory whose
// descriptor a socket hands out, as the harness shares it with plugins of
// this SDK, or cuMemAlloc memory exported for IPC.
type gpuArena struct {
	dev    *cuda.Device
	base   cuda.Ptr
	size   int
	handle [64]byte       // IPC
	shared *cuda.Shared   // by descriptor
	fds    *fdpass.Server // by descriptor
}

// newGPUArena allocates a zeroed arena shared by descriptor. The caller
// frees it, after the plugin detached.
func newGPUArena(t testing.TB, dev *cuda.Device, size int) *gpuArena {
	t.Helper()
	s, err := dev.AllocShared(size)
	must(t, err)
	must(t, dev.Memset8(s.Ptr(), 0, s.Size()))
	fds, err := fdpass.Serve("", s.ExportFD)
	must(t, err)
	return &gpuArena{dev: dev, base: s.Ptr(), size: size, shared: s, fds: fds}
}

// newIPCArena allocates a zeroed arena exported by IPC handle. The caller
// frees it, after the plugin detached: an exported allocation must outlive
// its importers.
func newIPCArena(t testing.TB, dev *cuda.Device, size int) *gpuArena {
	t.Helper()
	p, err := dev.Alloc(size)
	must(t, err)
	must(t, dev.Memset8(p, 0, size))
	h, err := dev.IpcHandle(p)
	must(t, err)
	return &gpuArena{dev: dev, base: p, size: size, handle: h}
}

// sharing names how a plugin maps a.
func sharing(a *gpuArena) string {
	if a.shared != nil {
		return "descriptor"
	}
	return "IPC handle"
}

func (a *gpuArena) desc() *kvpb.Arena {
	d := &kvpb.Arena{Backend: kvpb.Backend_BACKEND_CUDA, Device: int32(a.dev.Ordinal()), Size: uint64(a.size)}
	if a.shared != nil {
		d.FdSocket, d.MappedSize = a.fds.Path, uint64(a.shared.Size())
	} else {
		d.IpcHandle = a.handle[:]
	}
	return d
}

func (a *gpuArena) write(t testing.TB, off int, b []byte) {
	t.Helper()
	must(t, a.dev.HtoD(a.base.Add(off), b))
}

func (a *gpuArena) read(t testing.TB) []byte {
	t.Helper()
	b := make([]byte, a.size)
	must(t, a.dev.DtoH(b, a.base))
	return b
}

func (a *gpuArena) free() {
	if a.shared != nil {
		a.fds.Close()
		a.shared.Free()
		return
	}
	a.dev.Free(a.base)
}

// where names the region of an arena offset, for failure messages.
func (pl arenaPlan) where(off int) string {
	for _, pd := range pl.pools {
		for _, w := range []struct {
			name string
			win  *kvpb.Window
		}{{"guard before", pd.GuardBefore}, {"pool", pd.Pool}, {"guard after", pd.GuardAfter}} {
			if off >= int(w.win.Offset) && off < int(w.win.Offset+w.win.Size) {
				return fmt.Sprintf("%s %s, pool byte %+d", pd.Name, w.name, off-int(pd.Pool.Offset))
			}
		}
	}
	return "staging"
}
