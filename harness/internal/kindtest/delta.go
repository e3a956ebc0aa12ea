package kindtest

import (
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
)

// Delta is what changed from bg to mem over span, as a capture reports
// it: the changed bytes' maximal runs, at offsets from base, and the
// bytes themselves. The oracle tests play a kernel's writes on a copy of
// the background and judge this.
func Delta(mem, bg []byte, span pool.Window, base int) oracle.Delta {
	var d oracle.Delta
	for i := span.Off; i < span.End(); i++ {
		if mem[i] != bg[i] {
			d.Windows = pool.Extend(d.Windows, i-base, 1)
			d.Bytes = append(d.Bytes, mem[i])
		}
	}
	return d
}
