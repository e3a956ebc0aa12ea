package store

import (
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
)

func BenchmarkPrepareStage(b *testing.B) {
	for _, name := range []string{"bf16", "fp8-paged"} {
		b.Run(name, func(b *testing.B) {
			l, _ := layout.Builtin(name, 128, 64)
			g, _ := pool.Plan([]pool.Spec{{Name: "p", Layout: l, Slots: 4096}}, 0)
			tg := &Target{Config: Config{Backend: arena.SHM{}, Layout: l, Slots: 4096}}
			cases := drawCases(tg, 64)
			for i := 0; b.Loop(); i++ {
				NewOracle(l, g.Regions[0], 7, cases[i%len(cases)], oracle.Declared{})
			}
		})
	}
}
