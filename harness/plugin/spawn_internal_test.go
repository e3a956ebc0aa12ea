package plugin

import (
	"context"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// TestChildOutlivesStartingThread: a plugin's process dies with the
// harness (Pdeathsig), which Linux ties to the thread that forked it, not
// the process; Go ends a thread whose goroutine exits locked to it, as
// every CUDA device thread does when its arena closes. A process started
// from such a thread must live on after the thread ends.
func TestChildOutlivesStartingThread(t *testing.T) {
	r := newGroupRunner(exec.Command("sleep", "30"), nil)
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: Go ends this thread when the goroutine returns
		started <- r.Start(context.Background())
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	defer r.Kill(context.Background())
	// The starting goroutine has returned and its thread is ending; a
	// process tied to that thread is killed within milliseconds.
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if d := r.exitDetail(); d != "" {
			t.Fatalf("the plugin's process ended when the thread that started it did: %s", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
