package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/rundir"
)

// errInterrupted is the cause of a run's context once a signal asked the
// run to stop.
var errInterrupted = errors.New("interrupted")

// stopGrace is how long a run may take to stop after the first signal
// before it is ended as after a second one. Stopping means cancelling the
// plugin calls in flight (at once), closing targets (their detach has a
// short deadline of its own) and writing what finished; every command
// exits within 2 s of the signal, whatever a plugin does meanwhile.
const stopGrace = 1500 * time.Millisecond

// interruptible is the context every command runs under: SIGINT, SIGTERM
// and SIGHUP cancel it, with errInterrupted as its cause, and the command
// reports what finished. A second signal, or a run that does not stop
// within stopGrace, removes the run directories and their plugins and
// exits at once through exit.
func interruptible(stderr io.Writer, exit func(int)) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// A closed stdout (kvharness ... | head) must not kill the process
	// before it cleans up: with SIGPIPE caught, the write fails with EPIPE,
	// which stops the run (checkedWriter) and exits 2 after its plugins
	// and their children are gone. The signal itself needs no answer.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-done:
			return
		}
		fmt.Fprintf(stderr, "\nkvharness: interrupted (%v): stopping, what finished is reported; press Ctrl-C again to exit at once\n", sig)
		cancel(fmt.Errorf("%w (%v)", errInterrupted, sig))
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "kvharness: interrupted again: exiting now")
		case <-time.After(stopGrace):
			fmt.Fprintf(stderr, "kvharness: still stopping after %v: exiting now\n", stopGrace)
		case <-done:
			return
		}
		rundir.RemoveAll()    // kill this run's plugins and free its arenas
		plugin.KillChildren() // and whatever they started
		exit(exitInterrupted)
	}()
	return ctx, func() {
		signal.Stop(sigs)
		signal.Stop(pipe)
		close(done)
		cancel(nil)
	}
}

// interrupted reports whether a signal stopped the run.
func interrupted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errInterrupted)
}

// exitCode is a command's exit status, with an interrupted run's errors
// reported as the interruption they follow from (a violation found
// before the signal still exits 1).
func exitCode(ctx context.Context, code int) int {
	if code == exitError && interrupted(ctx) {
		return exitInterrupted
	}
	return code
}
