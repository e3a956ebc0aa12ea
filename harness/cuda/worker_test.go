package cuda

import (
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestWorkerOneThread: calls from many goroutines all run on one OS thread,
// which is what keeps a CUDA context current and a capture on its thread.
func TestWorkerOneThread(t *testing.T) {
	for _, spin := range []bool{false, true} {
		oneThread(t, startWorker(spin))
	}
}

func oneThread(t *testing.T, w *worker) {
	defer w.stop()
	var mu sync.Mutex
	tids := map[int]bool{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				_ = w.do(func() error {
					mu.Lock()
					tids[syscall.Gettid()] = true
					mu.Unlock()
					return nil
				})
			}
		})
	}
	wg.Wait()
	if len(tids) != 1 {
		t.Errorf("calls ran on %d OS threads (spinning %v); want 1", len(tids), w.spin)
	}
}

func TestWorkerPanicReachesCaller(t *testing.T) {
	for _, spin := range []bool{false, true} {
		panicReachesCaller(t, startWorker(spin))
	}
}

func panicReachesCaller(t *testing.T, w *worker) {
	defer w.stop()
	defer func() {
		if recover() == nil {
			t.Error("panic on the worker was not re-raised in the caller")
		}
	}()
	_ = w.do(func() error { panic("boom") })
}

// TestWorkerResults: an error comes back whether the caller caught it
// spinning or had to park for a call slower than the spin.
func TestWorkerResults(t *testing.T) {
	for _, spin := range []bool{false, true} {
		w := startWorker(spin)
		for _, d := range []time.Duration{0, 3 * spinFor} {
			want := errors.New("kernel said no")
			if err := w.do(func() error { time.Sleep(d); return want }); err != want {
				t.Errorf("spinning %v, call of %v: err %v; want %v", spin, d, err, want)
			}
		}
		w.stop()
	}
}
