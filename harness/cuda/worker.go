package cuda

import (
	"fmt"
	"runtime"
	"sync/atomic"
)

// worker runs functions on one goroutine locked to one OS thread. The CUDA
// context is current per thread and a stream capture must end on the thread
// that began it, so all driver calls of a device go through one worker.
//
// Handing a function to the worker costs a goroutine wake-up on each side
// (tens of microseconds on some virtual machines), so callers that make
// several driver calls in a row make them inside one do: a do issued from
// the worker's own thread, by a function the worker is already running,
// runs directly instead of queueing behind itself.
type worker struct {
	calls chan func()
	tid   atomic.Int64  // the locked thread's id, set before the first call runs
	busy  atomic.Bool   // a function is running on the thread
	trips atomic.Uint64 // functions handed over through calls
}

func newWorker() *worker {
	w := &worker{calls: make(chan func())}
	w.tid.Store(-1)
	go w.loop()
	return w
}

// loop never unlocks the thread: when the worker stops, the goroutine exits
// locked and Go discards the thread, so no other goroutine ever inherits its
// CUDA state.
func (w *worker) loop() {
	runtime.LockOSThread()
	w.tid.Store(threadID())
	for f := range w.calls {
		w.busy.Store(true)
		f()
		w.busy.Store(false)
	}
}

// onThread reports whether the caller is the worker itself, running a
// function it was given. No other goroutine runs on a locked thread, so
// the thread id identifies the worker's goroutine; the busy flag spares
// every other caller the system call.
func (w *worker) onThread() bool {
	return w.busy.Load() && threadID() == w.tid.Load()
}

// do runs f on the worker's thread and waits for it. A panic in f is carried
// back and re-raised on the caller's goroutine, where its stack makes sense.
// Called from the worker's thread (from inside another do), it runs f
// directly: the thread is already the right one, and queueing would wait
// for itself forever.
func (w *worker) do(f func() error) error {
	if w.onThread() {
		return f()
	}
	type result struct {
		err   error
		panic any
	}
	done := make(chan result, 1)
	w.trips.Add(1)
	w.calls <- func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{panic: p}
			}
		}()
		done <- result{err: f()}
	}
	r := <-done
	if r.panic != nil {
		panic(fmt.Sprintf("cuda: panic on device thread: %v", r.panic))
	}
	return r.err
}

// stop ends the worker after the calls already queued. The caller must make
// sure no do is in flight or will start.
func (w *worker) stop() { close(w.calls) }
