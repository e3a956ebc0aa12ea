package kernel

import (
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
)

// TestSpec: the CUDA scatter addresses rows as Store does and refuses the
// layouts Store refuses, with the same message.
func TestSpec(t *testing.T) {
	s, err := spec("", sdk.Layout{Name: "bf16", HeadDim: 128, PageSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	if s.Geometry != (cpustore.Rows{Stride: 256, ValueBytes: 256}) || !strings.Contains(source, s.Entry+"(") {
		t.Errorf("spec %+v", s)
	}
	_, err = spec("", sdk.Layout{Name: "fp8-rows", HeadDim: 128, PageSize: 64})
	if err == nil || !strings.Contains(err.Error(), "bf16 layout only") {
		t.Errorf("fp8-rows: %v", err)
	}
}
