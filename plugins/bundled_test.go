package plugins

import (
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/plugin"
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
