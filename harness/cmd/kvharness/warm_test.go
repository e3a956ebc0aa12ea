package main

import (
	"reflect"
	"testing"

	"github.com/kvharness/kvharness/harness/cuda"
)

// TestWarmGPUHint: the plugin is asked to open its GPU as it starts for
// runs that will attach arenas there (--backend cuda, or auto where a
// driver is), on the --device given, and never for the cpu backend.
func TestWarmGPUHint(t *testing.T) {
	if got := warmGPU("cpu", 0); got != nil {
		t.Errorf("--backend cpu: %v; want no hint", got)
	}
	if got, want := warmGPU("cuda", 2), []string{"KVHARNESS_WARM_GPU=2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("--backend cuda --device 2: %v; want %v", got, want)
	}
	got := warmGPU("auto", 0)
	if driver := cuda.Available() == nil; (got != nil) != driver {
		t.Errorf("--backend auto with a driver %v: hint %v", driver, got)
	}
}
