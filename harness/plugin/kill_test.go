package plugin_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/rundir"
)

func TestMain(m *testing.M) {
	if os.Getenv("KVHARNESS_TEST_HARNESS") == "1" {
		harnessChild()
		return
	}
	os.Exit(m.Run())
}

// harnessChild is a harness in the middle of a run: a plugin attached to
// an arena. It reports its run directory and waits to be killed.
func harnessChild() {
	ctx := context.Background()
	dir, err := rundir.Open()
	if err != nil {
		panic(err)
	}
	path, err := plugin.Resolve("fusedstore")
	if err != nil {
		panic(err)
	}
	p, err := plugin.Start(ctx, "fusedstore", path, plugin.Options{Dir: dir})
	if err != nil {
		panic(err)
	}
	l, _ := layout.Builtin("bf16", 128, 64)
	if _, err := store.Open(ctx, p, dir, store.Config{Backend: arena.SHM{}, Layout: l, Slots: 1024, MaxCapacity: 8, Seed: 1}); err != nil {
		panic(err)
	}
	fmt.Println("ready", dir.Path)
	time.Sleep(time.Minute)
}

// TestKilledHarnessLeavesNothing kills a harness with SIGKILL mid-run: its
// plugin must die with it (parent-death signal), no arena file may remain
// (arenas are unlinked once mapped), and the next run sweeps the run
// directory.
func TestKilledHarnessLeavesNothing(t *testing.T) {
	if _, err := plugin.Resolve("fusedstore"); err != nil {
		t.Skip(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "KVHARNESS_TEST_HARNESS=1")
	out, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready ") {
		child.Process.Kill()
		t.Fatalf("child harness did not get ready: %q %v", line, err)
	}
	runDir := strings.TrimSpace(strings.TrimPrefix(line, "ready "))
	if len(processesWith(runDir)) == 0 {
		t.Fatal("no plugin process found for the child harness")
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	waitGone(t, runDir)
	if entries, _ := os.ReadDir(runDir); hasArena(entries) {
		t.Errorf("arena file left in %s: %v", runDir, entries)
	}
	next, err := rundir.Open()
	if err != nil {
		t.Fatal(err)
	}
	next.Close()
	if _, err := os.Stat(runDir); !os.IsNotExist(err) {
		t.Errorf("the next run did not sweep %s: %v", runDir, err)
	}
}

func waitGone(t *testing.T, runDir string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for len(processesWith(runDir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("plugin processes outlived their harness: %v", processesWith(runDir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasArena(entries []os.DirEntry) bool {
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "arena-") {
			return true
		}
	}
	return false
}
