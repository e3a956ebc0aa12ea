package plugins

import (
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
)

// TestBundledAgree: the code table holds exactly the plugins the
// harness's table names, in its order, each with a main.
func TestBundledAgree(t *testing.T) {
	var names []string
	for _, c := range Bundled {
		names = append(names, c.Name)
		if c.Main == nil {
			t.Errorf("%s has no main", c.Name)
		}
	}
	if !slices.Equal(names, plugin.BundledNames()) {
		t.Errorf("code for %v, harness table %v", names, plugin.BundledNames())
	}
}

// TestServing: what the bundled plugins serve comes from their code (the
// kinds they register), fault injectors left out.
func TestServing(t *testing.T) {
	for kind, want := range map[protocol.Kernel][]string{
		"store":    {"fusedstore", "fp8store", "recipestore", "bf16scatter", "gostore"},
		"read":     {"fusedstore", "fp8store", "gostore"},
		"transfer": {"gostore", "pdtransfer"},
		"load":     {"layerload"},
		"pdasync":  {"pdasync"},
	} {
		if got := Serving(kind); !slices.Equal(got, want) {
			t.Errorf("Serving(%s) = %v, want %v", kind, got, want)
		}
	}
}
