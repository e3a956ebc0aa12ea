package load

import (
	"context"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/sdk"
	layerload "github.com/kvharness/kvharness/plugins/layerload/kernel"
)

func TestExplore(t *testing.T) {
	variants := []string{""}
	for _, v := range layerload.Plugin.Variants {
		variants = append(variants, v.Name)
	}
	for _, v := range variants {
		p := plugin.InProcess("layerload", sdk.NewServer(layerload.Plugin))
		s := &kind.Session{Plugin: p, Dir: plugintest.Dir(t)}
		suite, err := Suite(s, kind.Params{Variant: v, Cases: 50, Seed: 1, PageSize: 64, HeadDim: 128}, SuiteConfig{})
		if err != nil {
			t.Fatal(err)
		}
		vs, err := suite.Run(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		for _, vd := range vs {
			o := vd.Outcome
			if o.Failure != nil {
				t.Logf("%-24s %-6s FAIL at case %d (%s, shrinks %d, flaky %v): %v", v, vd.Label, o.Cases, o.Failure.Property, o.Failure.Shrinks, o.Failure.Flaky, o.Failure.Case)
				for i, x := range o.Failure.Minimal.Violations {
					if i < 3 {
						t.Logf("      %v", x)
					}
				}
			} else {
				t.Logf("%-24s %-6s pass %d cases (fault %v) %v", v, vd.Label, o.Cases, o.Fault, o.Elapsed)
			}
		}
	}
}
