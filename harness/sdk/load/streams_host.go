package load

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// engine is an Exec's backend: where its streams, events and counters
// live and how an operation is queued there.
type engine interface {
	device() *cuda.Device
	stream(name string) (any, error)
	event() (any, error)
	counter() (any, error)
	scratch(name string, n int) (memory, error)
	// issue queues o on the backend as the kernel queues it: on the GPU
	// the driver call; on the CPU nothing (the model runs it).
	issue(x *Exec, o *op) error
	// begin starts a call, with the latch set when latch is true.
	begin(x *Exec, latch bool) error
	// settle waits until every operation the model has run has run on
	// the backend, before the latch opens.
	settle(x *Exec) error
	// release opens the latch.
	release(x *Exec) error
	// force makes a stuck counter wait's value come true on the backend.
	force(x *Exec, o *op) error
	// finish waits for everything queued.
	finish(x *Exec) error
	// close frees what the engine made.
	close(x *Exec) error
}

// hostEngine runs an Exec on the CPU: the model is the executor, and an
// operation's effect is a memmove (or a launch's Host code) when it runs.
type hostEngine struct{}

// newHostExec is an Exec over host memories: the regions of a
// shared-memory attach.
func newHostExec(regions [][]byte) *Exec {
	x := &Exec{m: &model{}, eng: hostEngine{}}
	for i, r := range regions {
		x.mems = append(x.mems, memory{name: regionName(i), size: len(r), host: r})
	}
	x.m.run = x.runHost
	return x
}

// regionName names the attach's regions in traces.
func regionName(i int) string {
	switch i {
	case 0:
		return "device"
	case 1:
		return "host"
	}
	return fmt.Sprintf("region%d", i)
}

// runHost performs o's effect on host memory.
func (x *Exec) runHost(o *op) error {
	switch o.kind {
	case kvpb.LoadOpKind_LOAD_OP_KIND_COPY:
		d, s := o.writes[0], o.reads[0]
		copy(x.mems[d.At.Mem].host[d.At.Off:d.At.Off+d.N], x.mems[s.At.Mem].host[s.At.Off:s.At.Off+s.N])
	case kvpb.LoadOpKind_LOAD_OP_KIND_LAUNCH:
		if o.launch.Host == nil {
			return fmt.Errorf("launch %s has no host code for the CPU backend", o.launch.Name)
		}
		return o.launch.Host()
	}
	return nil
}

func (hostEngine) device() *cuda.Device       { return nil }
func (hostEngine) stream(string) (any, error) { return nil, nil }
func (hostEngine) event() (any, error)        { return nil, nil }
func (hostEngine) counter() (any, error)      { return nil, nil }
func (hostEngine) issue(*Exec, *op) error     { return nil }
func (hostEngine) begin(*Exec, bool) error    { return nil }
func (hostEngine) settle(*Exec) error         { return nil }
func (hostEngine) release(*Exec) error        { return nil }
func (hostEngine) force(*Exec, *op) error     { return nil }
func (hostEngine) finish(*Exec) error         { return nil }
func (hostEngine) close(*Exec) error          { return nil }
func (hostEngine) scratch(name string, n int) (memory, error) {
	return memory{name: "scratch " + name, size: n, host: make([]byte, n)}, nil
}
