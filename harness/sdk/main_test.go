package sdk_test

import (
	"os"
	"testing"

	"github.com/kvharness/kvharness/harness/sdk"
	scatter "github.com/kvharness/kvharness/plugins/bf16scatter/kernel"
	fp8 "github.com/kvharness/kvharness/plugins/fp8store/kernel"
	fused "github.com/kvharness/kvharness/plugins/fusedstore/kernel"
	recipe "github.com/kvharness/kvharness/plugins/recipestore/kernel"
)

// serveEnv makes this test binary a plugin: the GPU tests start it again
// with the variable naming a bundled plugin, and it serves that plugin over
// go-plugin. The harness's arena lives in the test process and the plugin
// opens it through its IPC handle, as in production (CUDA forbids opening
// one's own IPC handle, so the plugin must be another process anyway).
const serveEnv = "KVHARNESS_SDK_TEST_SERVE"

var bundled = map[string]sdk.Plugin{
	"bf16scatter": scatter.Plugin,
	"fusedstore":  fused.Plugin,
	"fp8store":    fp8.Plugin,
	"recipestore": recipe.Plugin,

	"pdtransfer-gpu": gpuTransferPlugin(),
}

// layoutsOf are the layouts each bundled plugin stores.
var layoutsOf = map[string][]string{
	"bf16scatter": {"bf16"},
	"fusedstore":  {"bf16", "fp8-paged", "fp8-rows"},
	"fp8store":    {"fp8-paged", "fp8-rows"},
	"recipestore": {"fp8-paged", "fp8-rows"},
}

// fixedLayoutsOf are the layouts of one head dim a bundled plugin also
// stores: they get arenas of their own.
var fixedLayoutsOf = map[string][]struct {
	name    string
	headDim int
}{
	"recipestore": {{"dsv4-main", 512}},
}

// slotBits is the slot width a bundled plugin's variant reads.
func slotBits(name, variant string) int {
	p := bundled[name]
	for _, v := range p.Variants {
		if v.Name == variant && v.SlotBits != 0 {
			return v.SlotBits
		}
	}
	if p.SlotBits != 0 {
		return p.SlotBits
	}
	return 64
}

func TestMain(m *testing.M) {
	if name := os.Getenv(serveEnv); name != "" {
		sdk.Serve(bundled[name])
		os.Exit(0)
	}
	os.Exit(m.Run())
}
