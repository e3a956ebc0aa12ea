package kernel

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/internal/enginestore"
)

// TestRulesMatchTheSource: every variant's FUSED_RULE number is the one
// fusedstore.cu documents and implements, so a reordered variant list
// cannot silently swap two CUDA mutants.
func TestRulesMatchTheSource(t *testing.T) {
	if rule("") != 0 || rule("no-such-variant") != 0 {
		t.Errorf("the correct kernel is not rule 0")
	}
	for i, v := range variants {
		n := rule(v.Name)
		if n != i+1 {
			t.Errorf("%s: rule %d; want %d", v.Name, n, i+1)
		}
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^//\s+%d\s+%s\s`, n, regexp.QuoteMeta(v.Name))).MatchString(source) {
			t.Errorf("fusedstore.cu does not document rule %d as %s", n, v.Name)
		}
		if !strings.Contains(source, fmt.Sprintf("FUSED_RULE == %d", n)) {
			t.Errorf("fusedstore.cu does not implement rule %d", n)
		}
	}
}

// TestSpecs: each layout gets its entry point, compiled from the CPU
// kernel's own geometry.
func TestSpecs(t *testing.T) {
	for layout, entry := range map[string]string{"bf16": "fusedstore_bf16", "fp8-paged": "fusedstore_fp8", "fp8-rows": "fusedstore_fp8"} {
		s, err := spec("sink-writes", sdk.Layout{Name: layout, HeadDim: 128, PageSize: 64})
		if err != nil {
			t.Fatal(err)
		}
		g, _, _ := geometry("", layout, 128, 64)
		if s.Entry != entry || s.Geometry != g || !strings.Contains(source, entry+"(") {
			t.Errorf("%s: entry %s geometry %+v; want %s %+v", layout, s.Entry, s.Geometry, entry, g)
		}
		if _, err := s.Options(); err != nil {
			t.Errorf("%s: %v", layout, err)
		}
	}
	if _, err := spec("", sdk.Layout{Name: "fp8-ds-mla", HeadDim: 576, PageSize: 64}); err == nil {
		t.Error("a layout the CPU kernel refuses got a CUDA kernel")
	}
}

// TestEngineRulesMatch: the engine layouts' CUDA stores implement the
// padding rules by fusedstore's numbers, and every engine layout has a
// kernel there.
func TestEngineRulesMatch(t *testing.T) {
	src := enginestore.Source()
	for _, v := range []string{"ignore-count", "sink-writes", "minus1-wraps", "off-by-one-tail", "oob-write", "slot-u16"} {
		if !strings.Contains(src, fmt.Sprintf("ES_RULE == %d", rule(v))) {
			t.Errorf("enginestore.cu does not implement %s as rule %d", v, rule(v))
		}
	}
	for _, name := range enginestore.Names {
		if _, err := enginestore.Options(name, enginestore.Dims{Heads: 2, HeadDim: 128, PageSize: 64, Pages: 3}, 0, enginestore.Bugs{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
