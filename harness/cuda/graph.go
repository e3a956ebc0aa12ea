package cuda

import "errors"

// captureRelaxed is CU_STREAM_CAPTURE_MODE_RELAXED. The device thread serves
// every goroutine using the device, so under a global or thread-local mode an
// unrelated call from another goroutine (an allocation, a synchronous copy)
// would count as an unsafe call on the capturing thread and invalidate the
// capture. Relaxed mode leaves such calls alone; they are not captured.
const captureRelaxed = 2

// Graph is a captured sequence of stream work.
type Graph object

// GraphExec is an instantiated Graph, ready to replay.
type GraphExec object

// BeginCapture starts recording the work queued on s into a graph instead of
// running it. The legacy default stream cannot be captured.
func (s *Stream) BeginCapture() error {
	if s == nil {
		if err := (*Device)(nil).usable(); !errors.Is(err, errNilHandle) {
			return err
		}
		return errors.New("cuda: cannot capture the legacy default stream; capture a stream from NewStream")
	}
	return s.d.checked("cuStreamBeginCapture", func(a *driverAPI) Result {
		return a.cuStreamBeginCapture(s.h, captureRelaxed)
	})
}

// EndCapture stops recording and returns the graph.
func (s *Stream) EndCapture() (*Graph, error) {
	g := &Graph{d: s.dev()}
	return created(s.dev(), g, "cuStreamEndCapture", func(a *driverAPI) Result {
		return a.cuStreamEndCapture(s.h, &g.h)
	})
}

func (g *Graph) dev() *Device { return (*object)(g).dev() }

// Instantiate prepares the graph for replay.
func (g *Graph) Instantiate() (*GraphExec, error) {
	x := &GraphExec{d: g.dev()}
	return created(g.dev(), x, "cuGraphInstantiateWithFlags", func(a *driverAPI) Result {
		return a.cuGraphInstantiateWithFlags(&x.h, g.h, 0)
	})
}

// Destroy releases the graph; executables instantiated from it live on.
func (g *Graph) Destroy() error {
	return g.dev().checked("cuGraphDestroy", func(a *driverAPI) Result { return a.cuGraphDestroy(g.h) })
}

func (x *GraphExec) dev() *Device { return (*object)(x).dev() }

// Launch replays the graph on s (nil: the legacy default stream). Kernel
// arguments are the values captured; pointers in them are read afresh, so
// rewriting a buffer a captured kernel reads changes what a replay computes.
func (x *GraphExec) Launch(s *Stream) error {
	return x.dev().checked("cuGraphLaunch", func(a *driverAPI) Result { return a.cuGraphLaunch(x.h, s.handle()) })
}

// Destroy releases the executable graph.
func (x *GraphExec) Destroy() error {
	return x.dev().checked("cuGraphExecDestroy", func(a *driverAPI) Result { return a.cuGraphExecDestroy(x.h) })
}
