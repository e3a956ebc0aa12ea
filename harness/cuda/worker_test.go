package cuda

import (
	"sync"
	"syscall"
	"testing"
)

// TestWorkerOneThread: calls from many goroutines all run on one OS thread,
// which is what keeps a CUDA context current and a capture on its thread.
func TestWorkerOneThread(t *testing.T) {
	w := newWorker()
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
		t.Errorf("calls ran on %d OS threads; want 1", len(tids))
	}
}

func TestWorkerPanicReachesCaller(t *testing.T) {
	w := newWorker()
	defer w.stop()
	defer func() {
		if recover() == nil {
			t.Error("panic on the worker was not re-raised in the caller")
		}
	}()
	_ = w.do(func() error { panic("boom") })
}
