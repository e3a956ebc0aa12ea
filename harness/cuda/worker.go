package cuda

import (
	"fmt"
	"runtime"
)

// worker runs functions on one goroutine locked to one OS thread. The CUDA
// context is current per thread and a stream capture must end on the thread
// that began it, so all driver calls of a device go through one worker.
type worker struct {
	calls chan func()
}

func newWorker() *worker {
	w := &worker{calls: make(chan func())}
	go w.loop()
	return w
}

// loop never unlocks the thread: when the worker stops, the goroutine exits
// locked and Go discards the thread, so no other goroutine ever inherits its
// CUDA state.
func (w *worker) loop() {
	runtime.LockOSThread()
	for f := range w.calls {
		f()
	}
}

// do runs f on the worker's thread and waits for it. A panic in f is carried
// back and re-raised on the caller's goroutine, where its stack makes sense.
func (w *worker) do(f func() error) error {
	type result struct {
		err   error
		panic any
	}
	done := make(chan result, 1)
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
