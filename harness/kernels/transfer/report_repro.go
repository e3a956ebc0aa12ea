package transfer

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/workload"
)

// TransferRepro saves a failing transfer verdict as a repro file (kernel
// "transfer"). The case carries its whole geometry; the file's layout is
// the first buffer's, its slots the tokens of one pool, so the common
// header reads as it does for stores.
func TransferRepro(pluginArg, variant string, bg int64, v property.Verdict) (*Repro, error) {
	fl := v.Outcome.Failure
	c, ok := fl.Minimal.Case.(*workload.Transfer)
	if !ok {
		return nil, fmt.Errorf("transfer repro of a %s case", fl.Minimal.Case.Kernel())
	}
	l, err := c.Geometry.Layout(0)
	if err != nil {
		return nil, err
	}
	vs := fl.Minimal.Violations
	if len(vs) > MaxViolations {
		vs = vs[:MaxViolations]
	}
	return &Repro{Version: ReproVersion, Kernel: c.Kernel(), Plugin: pluginArg, Variant: variant,
		Layout: l.JSON(), Slots: c.Geometry.Pages * c.Geometry.PageSize, BackgroundSeed: bg, Case: c,
		Found: &Found{Property: fl.Property, Flaky: fl.Flaky, Seed: v.Seed, CaseIndex: v.Outcome.Cases,
			Shrinks: fl.Shrinks, Violations: vs}}, nil
}
