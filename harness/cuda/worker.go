package cuda

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// worker runs functions on one goroutine locked to one OS thread. The CUDA
// context is current per thread and a stream capture must end on the thread
// that began it, so all driver calls of a device go through one worker.
//
// Handing a function to a parked thread and its result back costs a wake-up
// on each side: about 20 µs a trip on a GPU virtual machine, more than the
// small copy it carries. So both sides spin a while before they park: the
// worker waits spinFor for the next call, the caller spinFor for its
// result, and a burst of calls goes through without a wake-up. Callers that
// make several driver calls in a row still make them inside one do: a do
// issued from the worker's own thread, by a function the worker is already
// running, runs directly instead of queueing behind itself.
type worker struct {
	calls chan *job
	tid   atomic.Int64  // the locked thread's id, set before the first call runs
	busy  atomic.Bool   // a function is running on the thread
	trips atomic.Uint64 // functions handed over through calls
	spin  bool          // spinning pays: there is a CPU for each side
}

// spinFor is how long each side of a trip spins before it parks.
const spinFor = 100 * time.Microsecond

// job is one function handed to the worker, and its outcome.
type job struct {
	f     func() error
	err   error
	panic any
	done  atomic.Bool   // set once err and panic are
	wake  chan struct{} // closed after done, for a caller that parked
}

func newWorker() *worker {
	return startWorker(os.Getenv(SpinEnv) == "1" && runtime.GOMAXPROCS(0) > 2)
}

// SpinEnv, set to 1, makes device threads and their callers spin before
// they park (see worker). Off by default: on a GPU virtual machine the
// spinning threads slowed the copies and RPCs around them by more than
// the wake-ups they saved.
const SpinEnv = "KVHARNESS_CUDA_SPIN"

// startWorker starts a worker that spins, or parks at once.
func startWorker(spin bool) *worker {
	w := &worker{calls: make(chan *job, 1), spin: spin}
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
	for {
		j, ok := w.next()
		if !ok {
			return
		}
		w.busy.Store(true)
		j.run()
		w.busy.Store(false)
	}
}

// next takes the next call, spinning for one before parking.
func (w *worker) next() (*job, bool) {
	if w.spin {
		for deadline := time.Now().Add(spinFor); time.Now().Before(deadline); {
			select {
			case j, ok := <-w.calls:
				return j, ok
			default:
			}
		}
	}
	j, ok := <-w.calls
	return j, ok
}

// run calls f, keeping a panic for the caller, and reports the outcome.
func (j *job) run() {
	defer func() {
		j.panic = recover()
		j.done.Store(true)
		close(j.wake)
	}()
	j.err = j.f()
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
	j := &job{f: f, wake: make(chan struct{})}
	w.trips.Add(1)
	w.calls <- j
	w.wait(j)
	if j.panic != nil {
		panic(fmt.Sprintf("cuda: panic on device thread: %v", j.panic))
	}
	return j.err
}

// wait returns once j is done, spinning for it before parking.
func (w *worker) wait(j *job) {
	if w.spin {
		for deadline := time.Now().Add(spinFor); time.Now().Before(deadline); {
			if j.done.Load() {
				return
			}
		}
	}
	<-j.wake
}

// stop ends the worker after the calls already queued. The caller must make
// sure no do is in flight or will start.
func (w *worker) stop() { close(w.calls) }
