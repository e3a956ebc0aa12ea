package arena

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/protocol"
)

// Space is the kind of memory a region lives in.
type Space int

const (
	// HostShared is a file in host shared memory that harness and plugin
	// both map: the embedded default.
	HostShared Space = iota + 1
	// Device is the memory of one GPU, exported to the plugin by a file
	// descriptor or an IPC handle.
	Device
	// PinnedHost is host shared memory the plugin registers with its GPU
	// (cuMemHostRegister), so that copy engines move it asynchronously: a
	// layer-load kind's host pool. On a machine without a GPU it is plain
	// host shared memory.
	PinnedHost
)

func (s Space) String() string {
	switch s {
	case HostShared:
		return "host"
	case Device:
		return "device"
	case PinnedHost:
		return "pinned-host"
	}
	return fmt.Sprintf("Space(%d)", int(s))
}

// Place is where a backend's arenas live: a memory space and, on a GPU,
// the device's name. Reports print it; code branches on Space.
type Place struct {
	Space   Space
	Device  string // the GPU's name, for Device
	Ordinal int    // the GPU's CUDA ordinal, for Device
}

// OnDevice reports whether arenas live in GPU memory.
func (p Place) OnDevice() bool { return p.Space == Device }

// String is what reports print: "cpu" for host memory, "cuda:NAME" for a
// GPU's.
func (p Place) String() string {
	if p.Space == Device {
		return "cuda:" + p.Device
	}
	return "cpu"
}

// Region is one memory region of an attach: its storage and its space.
// Pools and staging windows name the region they lie in by index.
type Region struct {
	Space Space
	Mem   Memory
}

// Arena is everything one attach maps: one or more regions, each in a
// memory space of its own (a layer-load kind's pinned host pool beside its
// device pools). Region 0 is the arena older plugins know.
type Arena struct {
	Regions []Region
}

// One is an arena of a single region.
func One(space Space, m Memory) *Arena { return &Arena{Regions: []Region{{space, m}}} }

// Mem is region 0's memory.
func (a *Arena) Mem() Memory { return a.Regions[0].Mem }

// Descs describes every region for an attach, in order.
func (a *Arena) Descs() []protocol.ArenaDesc {
	out := make([]protocol.ArenaDesc, len(a.Regions))
	for i, r := range a.Regions {
		d := r.Mem.Desc()
		d.Pinned = r.Space == PinnedHost
		out[i] = d
	}
	return out
}

// Close frees every region and returns the first error.
func (a *Arena) Close() error {
	var first error
	for _, r := range a.Regions {
		if err := r.Mem.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
