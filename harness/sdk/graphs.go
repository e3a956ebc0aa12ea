package sdk

import (
	"errors"
	"fmt"

	"github.com/kvharness/kvharness/harness/cuda"
)

// graphCache holds the instantiated graphs of one attach, by key: what a
// captured call depends on, a comparable value of the kind's own type
// (the store's shape; emptyGraph for the empty kernel of benches).
type graphCache struct {
	execs map[any]*cuda.GraphExec
}

// emptyGraph keys the empty kernel's graph (launch-overhead benches).
type emptyGraph struct{}

// Graph returns the attach's CUDA graph for key, capturing what enqueue
// queues on the arena's stream the first time: a kind replays it for
// later calls of the same key. Capture is relaxed (see
// cuda.Stream.BeginCapture): calls the kernel makes outside the stream
// are not captured and do not break the capture.
func (a *DeviceArena) Graph(key any, enqueue func() error) (*cuda.GraphExec, error) {
	return a.graphs.get(key, a.stream, enqueue)
}

// get returns the graph for key, capturing what enqueue queues on s the
// first time.
func (c *graphCache) get(key any, s *cuda.Stream, enqueue func() error) (*cuda.GraphExec, error) {
	if x := c.execs[key]; x != nil {
		return x, nil
	}
	x, err := capture(s, enqueue)
	if err != nil {
		return nil, fmt.Errorf("capture a CUDA graph for %+v: %w", key, err)
	}
	if c.execs == nil {
		c.execs = make(map[any]*cuda.GraphExec)
	}
	c.execs[key] = x
	return x, nil
}

// capture records enqueue into a graph and instantiates it. The capture
// is always ended, even when enqueue fails, so the stream stays usable.
func capture(s *cuda.Stream, enqueue func() error) (*cuda.GraphExec, error) {
	if err := s.BeginCapture(); err != nil {
		return nil, err
	}
	qerr := enqueue()
	g, err := s.EndCapture()
	if qerr != nil || err != nil {
		if g != nil {
			g.Destroy()
		}
		return nil, errors.Join(qerr, err)
	}
	defer g.Destroy()
	return g.Instantiate()
}

// destroy releases every graph.
func (c *graphCache) destroy() error {
	var errs []error
	for k, x := range c.execs {
		errs = append(errs, x.Destroy())
		delete(c.execs, k)
	}
	return errors.Join(errs...)
}
