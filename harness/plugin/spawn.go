package plugin

import (
	"os/exec"
	"runtime"
	"sync"
)

// Plugin processes are started from one OS thread that never ends. A
// process dies with the harness through Pdeathsig, and Linux sends it when
// the thread that forked the process ends, not the process: Go ends a
// thread whose goroutine returns while locked to it, which every CUDA
// device thread does when its arena closes (cuda.Device.Close). A plugin
// forked from a thread that later became a device thread was killed with
// SIGKILL mid-run, reported as a crash of the plugin.
var spawner struct {
	once  sync.Once
	calls chan func()
}

// startOnSpawner runs cmd.Start on the spawning thread.
func startOnSpawner(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		Guard()
		spawner.calls = make(chan func())
		go func() {
			runtime.LockOSThread() // for the life of the process
			for f := range spawner.calls {
				f()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.calls <- func() { done <- cmd.Start() }
	return <-done
}
