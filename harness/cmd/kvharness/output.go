package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// errOutputLost is the cause of a run's context once writing its output
// failed: a report nobody can read is not worth finishing.
var errOutputLost = errors.New("output lost")

// checkedWriter is a command's stdout or stderr: it remembers the first
// write that failed (a full disk, a closed pipe, /dev/full) and stops the
// run, so that a report that could not be written is never an exit 0.
type checkedWriter struct {
	w    io.Writer
	name string
	stop context.CancelCauseFunc
	mu   sync.Mutex
	err  error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		c.err = err
		c.stop(fmt.Errorf("%w: %s: %v", errOutputLost, c.name, err))
	}
	return n, err
}

// failed is the first write error, or nil.
func (c *checkedWriter) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// checkOutput turns a command's exit code into exit 2 when its stdout or
// stderr failed, saying so on whichever of the two still works (on stderr
// when both failed, in case the failure passed).
func checkOutput(code int, stdout, stderr *checkedWriter) int {
	outErr, errErr := stdout.failed(), stderr.failed()
	switch {
	case outErr != nil && errErr == nil:
		fmt.Fprintf(stderr, "kvharness: writing to stdout failed (%v): the output is incomplete, and nothing that follows from it holds; write it where there is room (a file, a pipe read to its end)\n", outErr)
	case errErr != nil && outErr == nil:
		fmt.Fprintf(stdout, "kvharness: writing to stderr failed (%v): its messages are lost; give it where there is room\n", errErr)
	case outErr != nil:
		fmt.Fprintf(stderr.w, "kvharness: writing to stdout and stderr failed (%v; %v)\n", outErr, errErr)
	default:
		return code
	}
	return exitError
}
