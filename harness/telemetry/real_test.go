package telemetry

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const childEnv = "KVHARNESS_TELEMETRY_CHILD"

// TestRealLibrary runs Collect on the real NVML in a child process, so a
// call after a failed Init (which kills the process with a symbol lookup
// error) shows up as a failed child, not a vanished test binary. Without a
// GPU, Collect must return ErrUnavailable and the child must exit cleanly;
// with one, it must return a snapshot.
func TestRealLibrary(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestRealLibraryChild$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("child output:\n%s", out)
	if err != nil {
		t.Fatalf("child process died: %v (an NVML call after a failed Init?)", err)
	}
	switch {
	case strings.Contains(string(out), "telemetry-child: unavailable: "):
		t.Log("no usable NVIDIA driver here: Collect returned ErrUnavailable and the process survived")
	case strings.Contains(string(out), "telemetry-child: collected"):
		t.Log("real GPUs found")
	default:
		t.Fatal("child ended without reporting a result")
	}
}

func TestRealLibraryChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestRealLibrary")
	}
	lib := NewLibrary()
	for range 2 { // a second Collect after a failed one must be as safe
		snap, err := Collect(lib)
		if errors.Is(err, ErrUnavailable) {
			if !strings.Contains(err.Error(), "NVML") && !strings.Contains(err.Error(), "NVIDIA") {
				t.Errorf("error does not say why: %v", err)
			}
			fmt.Printf("telemetry-child: unavailable: %v\n", err)
			continue
		}
		if err != nil {
			t.Fatalf("Collect: %v", err)
		}
		if len(snap.Devices) == 0 || snap.DriverVersion == "" {
			t.Fatalf("snapshot without devices or driver version: %+v", snap)
		}
		if err := snap.WriteText(os.Stdout); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("telemetry-child: collected %d GPU(s)\n", len(snap.Devices))
	}
}
