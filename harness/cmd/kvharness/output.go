package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/kvharness/kvharness/harness/internal/textsafe"
)

// errOutputLost is the cause of a run's context once writing its output
// failed: a report nobody can read is not worth finishing.
var errOutputLost = errors.New("output lost")

// checkedWriter is a command's stdout or stderr. Everything printed goes
// through textsafe's escaping (no path can print a control character that
// came from outside raw: a layout's name, a benchmark's, a plugin's crash
// message), and it remembers the first write that failed (a full disk, a
// closed pipe, /dev/full) and stops the run, so that a report that could
// not be written is never an exit 0.
type checkedWriter struct {
	w    io.Writer // the stream
	safe *textsafe.Writer
	name string
	stop context.CancelCauseFunc
	mu   sync.Mutex
	err  error
}

func newCheckedWriter(w io.Writer, name string, stop context.CancelCauseFunc) *checkedWriter {
	c := &checkedWriter{w: w, name: name, stop: stop}
	c.safe = &textsafe.Writer{W: writerFunc(c.write)}
	return c
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	return c.safe.Write(p)
}

// write writes escaped bytes to the stream, noting a failure.
func (c *checkedWriter) write(p []byte) (int, error) {
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

// flush writes what the escaping holds back (an unfinished UTF-8 sequence).
func (c *checkedWriter) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.safe.Flush()
	}
}

// terminalFile is the file under a command's stream, for what draws on a
// terminal itself (the progress bar: its escapes are kvharness's own).
func terminalFile(w io.Writer) (*os.File, bool) {
	if c, ok := w.(*checkedWriter); ok {
		w = c.w
	}
	f, ok := w.(*os.File)
	return f, ok
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

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
	stdout.flush()
	stderr.flush()
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
