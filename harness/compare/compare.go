package compare

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// CompareFiles compares the Go benchmark files at basePath and newPath.
func CompareFiles(basePath, newPath string, o Options) (*Report, error) {
	base, err := os.Open(basePath)
	if err != nil {
		return nil, fmt.Errorf("open base file: %w", err)
	}
	defer base.Close()
	next, err := os.Open(newPath)
	if err != nil {
		return nil, fmt.Errorf("open new file: %w", err)
	}
	defer next.Close()
	return Compare(basePath, base, newPath, next, o)
}

// Compare compares the Go benchmark text read from base and next; the
// names are used in messages. It returns an error only when a file cannot
// be read; statistical problems are verdicts and warnings.
func Compare(baseName string, base io.Reader, newName string, next io.Reader, o Options) (*Report, error) {
	o = o.withDefaults()
	old, err := readTable(base, baseName, o.Ignore)
	if err != nil {
		return nil, err
	}
	nw, err := readTable(next, newName, o.Ignore)
	if err != nil {
		return nil, err
	}
	rep := &Report{Base: baseName, New: newName, Options: o, Warnings: configWarnings(old, nw)}
	units := mergeUnits(old.units, nw.units)
	d := drift{old, nw}
	for _, k := range rowOrder(old, nw) {
		row := compareRow(k, old.values[k], nw.values[k], units, o)
		judgeNet(&row, k, d, o)
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

// rowOrder lists every row of either file, grouped by unit (units in
// order of first appearance), benchmarks in order of first appearance.
func rowOrder(a, b *table) []rowKey {
	var units []string
	byUnit := map[string][]rowKey{}
	seen := map[rowKey]bool{}
	for _, k := range slices.Concat(a.order, b.order) {
		if seen[k] {
			continue
		}
		seen[k] = true
		if _, ok := byUnit[k.unit]; !ok {
			units = append(units, k.unit)
		}
		byUnit[k.unit] = append(byUnit[k.unit], k)
	}
	var out []rowKey
	for _, u := range units {
		out = append(out, byUnit[u]...)
	}
	return out
}

func compareRow(k rowKey, old, next []float64, units benchfmt.UnitMetadataMap, o Options) Row {
	row := Row{Name: k.name, Unit: k.unit, Better: direction(units, k.unit), P: 1}
	assume := units.GetAssumption(k.unit)
	th := &benchmath.Thresholds{CompareAlpha: o.Alpha}
	if len(old) > 0 {
		row.Old = summarize(assume, benchmath.NewSample(old, th), o, &row)
	}
	if len(next) > 0 {
		row.New = summarize(assume, benchmath.NewSample(next, th), o, &row)
	}
	if len(old) == 0 || len(next) == 0 {
		row.Verdict = Missing
		return row
	}
	row.DeltaPct = deltaPct(row.Old.Center, row.New.Center)
	if assume != benchmath.AssumeExact && minUTestP(len(old), len(next)) >= o.Alpha {
		row.Verdict = Insufficient
		row.Warnings = append(row.Warnings, fmt.Errorf("too few values for a U-test to reach p < %v: %d and %d (4 per side suffice; write more lines per cell)", o.Alpha, len(old), len(next)))
		return row
	}
	c := assume.Compare(benchmath.NewSample(old, th), benchmath.NewSample(next, th))
	row.P = c.P
	row.Warnings = append(row.Warnings, c.Warnings...)
	row.Verdict = decide(c.P, o.Alpha, row.DeltaPct, o.Threshold, row.Better)
	return row
}

// judgeNet re-judges a tested kernel row against the floor measured beside
// it (see drift), and marks floors as references, unless o.Absolute. A
// change counts only when both its own size and its size net of the
// floor's drift pass the threshold, and the two medians' confidence
// intervals are apart: the machine's drift alone never makes a
// regression, at the price that a regression which a faster machine
// masked (+1% raw, +15% net) is not called one either. Per-launch rows
// take LatencyThreshold: their times include the host's wait for the GPU,
// which moves between runs far more than a batch does. Rates are the same
// samples as the times, judged there.
func judgeNet(row *Row, k rowKey, d drift, o Options) {
	if o.Absolute || row.Verdict == Missing || row.Verdict == Insufficient {
		return
	}
	if isFloor(k.name) {
		row.Verdict = Reference
		return
	}
	ref, ratio, ok := d.reference(k)
	if !ok {
		return
	}
	if !strings.HasSuffix(k.unit, "sec/op") {
		row.Verdict = Derived
		return
	}
	row.Ref, row.RefDeltaPct = ref, (ratio-1)*100
	row.NetDeltaPct = ((1+row.DeltaPct/100)/ratio - 1) * 100
	th := o.Threshold
	if strings.Contains(k.name, "/timing=per-launch") {
		th = o.LatencyThreshold
	}
	raw := decide(row.P, o.Alpha, row.DeltaPct, th, row.Better)
	net := decide(row.P, o.Alpha, row.NetDeltaPct, th, row.Better)
	row.Verdict = Unchanged
	if raw == net && apart(row.Old, row.New) {
		row.Verdict = raw
	}
}

// apart reports whether two sides' confidence intervals are disjoint. A
// tail that doubles within its own interval (a per-launch p99.9 of ten
// lines, ±100%) is noise a rerun shows, not a change.
func apart(a, b Side) bool { return a.Hi < b.Lo || b.Hi < a.Lo }

func summarize(assume benchmath.Assumption, s *benchmath.Sample, o Options, row *Row) Side {
	sum := assume.Summary(s, o.Confidence)
	row.Warnings = append(row.Warnings, sum.Warnings...)
	return Side{Summary: sum, N: len(s.Values)}
}

func deltaPct(old, next float64) float64 {
	switch {
	case old != 0:
		return (next - old) / math.Abs(old) * 100
	case next == old:
		return 0
	}
	return math.Copysign(math.Inf(1), next)
}
