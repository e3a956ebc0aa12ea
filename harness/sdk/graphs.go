package sdk

import (
	"errors"
	"fmt"

	"github.com/kvharness/kvharness/harness/cuda"
)

// graphKey is what a captured store depends on. The valid count is not in
// it: replays read n from the pool's device word, which is exactly how a
// serving engine replays a graph captured for a bigger batch (and how the
// incident's pad-unaware scatter wrote the padded rows' slots).
type graphKey struct {
	pool      int // -1: the empty kernel of launch-overhead benches
	capacity  int
	padding   Padding
	rows, loc uint64 // arena offsets
	variant   string
}

// graphCache holds the instantiated graphs of one attach.
type graphCache struct {
	execs map[graphKey]*cuda.GraphExec
}

// get returns the graph for key, capturing what enqueue queues on s the
// first time. Capture is relaxed (see cuda.Stream.BeginCapture): calls the
// kernel makes outside the stream are not captured and do not break the
// capture.
func (c *graphCache) get(key graphKey, s *cuda.Stream, enqueue func() error) (*cuda.GraphExec, error) {
	if x := c.execs[key]; x != nil {
		return x, nil
	}
	x, err := capture(s, enqueue)
	if err != nil {
		return nil, fmt.Errorf("capture a CUDA graph for %+v: %w", key, err)
	}
	if c.execs == nil {
		c.execs = make(map[graphKey]*cuda.GraphExec)
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
