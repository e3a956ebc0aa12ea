// Package kerneltest holds test helpers shared by the bundled plugins'
// CUDA kernel builders (gpustore, gpuread): what their specs' NVRTC
// options must say.
package kerneltest

import (
	"slices"
	"testing"
)

// HasOptions fails t for every wanted option that opts lack: a spec's
// geometry, launch shape and mutants reach its kernel as these macros.
func HasOptions(t testing.TB, opts []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(opts, w) {
			t.Errorf("options %v lack %s", opts, w)
		}
	}
}
