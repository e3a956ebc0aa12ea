package compare

import (
	"bytes"
	"testing"

	"github.com/kvharness/kvharness/harness/results"
)

func TestWriteTextGolden(t *testing.T) {
	slowBase, slowNew := cell(t, "slowed", 4096, 200, 1.0, 1), cell(t, "slowed", 4096, 200, 1.2, 2)
	sameBase, sameNew := cell(t, "same", 4096, 200, 1.0, 3), cell(t, "same", 4096, 200, 1.0, 4)
	fewBase, fewNew := cell(t, "few", 16, 3, 0.1, 5), cell(t, "few", 16, 3, 0.12, 6)
	gone := cell(t, "gone", 16, 30, 0.1, 7)
	base := benchText(t, 10, slowBase, sameBase, fewBase, gone)
	for _, c := range []*results.Cell{&slowNew, &sameNew, &fewNew} {
		c.Env.Driver = "575.51" // a driver update: warned about
	}
	next := benchText(t, 10, slowNew, sameNew, fewNew)
	r := compareText(t, base, next)
	var buf bytes.Buffer
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "report", buf.Bytes())
}
