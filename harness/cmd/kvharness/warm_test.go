package main

import (
	"reflect"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/plugin"
)

// TestOnGPU: a run that will attach arenas on a GPU (--backend cuda, or
// auto where a driver is) tells its spare plugin processes, and only
// them, to open the GPU of --device as they start; a cpu run tunes
// nothing.
func TestOnGPU(t *testing.T) {
	if onGPU(arena.Want{Backend: arena.WantCPU}) != nil {
		t.Error("--backend cpu tunes the plugin's processes; want them as they are")
	}
	var o plugin.Options
	onGPU(arena.Want{Backend: arena.WantCUDA, Device: 2})(&o)
	if want := []string{"KVHARNESS_WARM_GPU=2"}; !reflect.DeepEqual(o.SpareEnv, want) || len(o.Env) > 0 {
		t.Errorf("--backend cuda --device 2: env %v, spare env %v; want none and %v", o.Env, o.SpareEnv, want)
	}
	if driver := cuda.Available() == nil; (onGPU(arena.Want{Backend: arena.WantAuto}) != nil) != driver {
		t.Errorf("--backend auto, driver present %v: tuned %v", driver, !driver)
	}
}
