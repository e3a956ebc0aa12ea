package main

import (
	"errors"
	"fmt"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/report"
)

// replayOn is where and how repro replays a case: as the file records it
// (the backend, device and graph mode the case was found with), unless
// --backend, --device or --graph say otherwise.
type replayOn struct {
	want  arena.Want
	graph bool
	// asFound: neither backend nor graph mode was overridden.
	asFound bool
	// graphFlag: --graph was given; without it, a replay that lands on
	// the host drops the file's graph mode rather than refuse.
	graphFlag bool
	found     report.Ran // how the case ran when it was found
	version   int        // the file's format version
}

// replayWhere reads the file's record and the override flags.
func replayWhere(r *report.Repro, changed func(string) bool, backend string, device int, graph bool) (replayOn, error) {
	on := replayOn{found: r.Ran, version: r.Version, graph: r.Graph, asFound: true}
	name, ordinal := r.OnBackend(), r.DeviceOrdinal
	if changed("backend") {
		name, on.asFound = backend, on.asFound && backend == r.OnBackend()
	}
	if changed("device") {
		ordinal = device
	}
	want, err := arena.ParseWant(name, ordinal)
	if err != nil {
		return on, err
	}
	on.want = want
	switch {
	case changed("graph"):
		on.graph, on.asFound, on.graphFlag = graph, on.asFound && graph == r.Graph, true
	case want.Backend == arena.WantCPU:
		on.graph = false // the host has no CUDA graphs: the bytes replay eagerly
	}
	if on.graph && want.Backend == arena.WantCPU {
		return on, fmt.Errorf("--graph needs the cuda backend (CUDA graphs); --backend cpu replays eagerly")
	}
	return on, nil
}

// present refuses, before any plugin starts, a replay on the file's GPU
// backend on a machine without one: the one line names the flag that
// replays the case's bytes on the host instead, and what that cannot show.
func (on replayOn) present(path string) error {
	if !on.asFound || on.want.Backend != arena.WantCUDA {
		return nil
	}
	if err := cuda.Available(); err != nil {
		return fmt.Errorf("%s was found on %s, and this machine has no usable GPU (%v): replay it on a GPU machine, or give --backend cpu to replay its bytes on the host (where %s)",
			path, on.found.Where(), err, hostCaveat(on.found))
	}
	return nil
}

// choose resolves the backend for a plugin serving served; a refusal of
// the file's own backend names the flag to override it. A replay that
// lands on the host (--backend auto without a GPU) replays eagerly,
// unless --graph insists.
func (on *replayOn) choose(served []protocol.Backend, path string) (arena.Backend, func(), error) {
	b, release, err := on.want.Choose(served)
	if err != nil && on.asFound && errors.Is(err, arena.ErrBackend) {
		return nil, release, fmt.Errorf("%s was found on %s: %v; give --backend cpu to replay its bytes on the host (where %s)",
			path, on.found.Where(), err, hostCaveat(on.found))
	}
	if err == nil && on.graph && !b.Place().OnDevice() {
		if on.graphFlag {
			release()
			return nil, func() {}, fmt.Errorf("--graph needs the cuda backend (CUDA graphs); this replay is on the cpu backend")
		}
		on.graph = false
	}
	return b, release, err
}

// firstLine says where the replay runs and whether that is where the case
// was found: the first line repro prints.
func (on replayOn) firstLine(b arena.Backend) string {
	here := kind.RanOn(b, on.graph)
	switch {
	case on.version < 2:
		return fmt.Sprintf("replaying on %s: a version %d repro file records no backend or mode, and replays on the host as it always did", here.Where(), on.version)
	case on.asFound && here.Device != on.found.Device && on.found.Device != "":
		return fmt.Sprintf("replaying on %s, the backend and mode the case was found with (on a %s)", here.Where(), on.found.Device)
	case on.asFound:
		return fmt.Sprintf("replaying on %s, as the case was found", here.Where())
	case !b.Place().OnDevice() && on.found.OnBackend() == report.BackendCUDA:
		return fmt.Sprintf("replaying on %s, not as found (on %s): the case's bytes on the host, where %s; a pass here proves nothing about them", here.Where(), on.found.Where(), hostCaveat(on.found))
	}
	return fmt.Sprintf("replaying on %s, not as found (on %s)", here.Where(), on.found.Where())
}

// hostCaveat is what a GPU finding replayed on the host cannot show.
func hostCaveat(found report.Ran) string {
	if found.Graph {
		return "graph-replay and device-ordering bugs cannot show"
	}
	return "device-ordering and device-memory bugs cannot show"
}

// identityNote says, when the plugin that replays is not the one the
// file records (another version, or another binary by its SHA-256), what
// differs; "" when it is the same or the file does not say.
func identityNote(found, now *report.PluginIdentity) string {
	switch {
	case found == nil || now == nil || found.Name != now.Name:
		return ""
	case found.Version != now.Version:
		return fmt.Sprintf("note: plugin %s is version %s here; the case was found with version %s", now.Name, now.Version, found.Version)
	case found.SHA256 != "" && now.SHA256 != "" && found.SHA256 != now.SHA256:
		return fmt.Sprintf("note: plugin %s's %s has SHA-256 %.12s… here; the case was found with %.12s… (rebuilt since)", now.Name, now.Of, now.SHA256, found.SHA256)
	}
	return ""
}
