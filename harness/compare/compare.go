package compare

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"

	"github.com/kvharness/kvharness/harness/internal/inputfile"
)

// MaxFileBytes bounds a benchmark file compare reads: a GPU night's
// bench.txt is under a megabyte, and /dev/zero or a multi-gigabyte log
// given by mistake must be an error, not a read until memory runs out.
const MaxFileBytes = 256 << 20

// CompareFiles compares the Go benchmark files at basePath and newPath,
// each read whole and bounded (MaxFileBytes).
func CompareFiles(basePath, newPath string, o Options) (*Report, error) {
	base, err := inputfile.Read(basePath, "base file", MaxFileBytes)
	if err != nil {
		return nil, err
	}
	next, err := inputfile.Read(newPath, "new file", MaxFileBytes)
	if err != nil {
		return nil, err
	}
	return Compare(basePath, bytes.NewReader(base), newPath, bytes.NewReader(next), o)
}

// Compare compares the Go benchmark text read from base and next; the
// names are used in messages. It returns an error when a file cannot be
// read, holds no runs (lines written before kvharness bench measured in
// runs), or ran on another device or configuration (a *ConfigError,
// unless Options.AllowConfigDiff); statistical problems are verdicts.
func Compare(baseName string, base io.Reader, newName string, next io.Reader, o Options) (*Report, error) {
	o = o.withDefaults()
	filter, err := newFilter(o.Filter)
	if err != nil {
		return nil, err
	}
	old, err := readTable(base, baseName, o.Ignore, filter)
	if err != nil {
		return nil, err
	}
	nw, err := readTable(next, newName, o.Ignore, filter)
	if err != nil {
		return nil, err
	}
	if err := metricIn(o.Metric, old, nw); err != nil {
		return nil, err
	}
	warnings, err := checkConfigs(old, nw, o.AllowConfigDiff)
	if err != nil {
		return nil, err
	}
	rep := &Report{Base: baseName, New: newName, Options: o, Warnings: warnings, Config: [2]map[string]string{old.config, nw.config}}
	units := mergeUnits(old.units, nw.units)
	d := drift{old, nw}
	for _, name := range cellOrder(old, nw) {
		rep.Cells = append(rep.Cells, judge(name, old, nw, units, d, o))
	}
	return rep, nil
}

// metricIn refuses a metric neither file holds: every cell would fall
// back to sec/op, and the report would say it was judged on a unit that
// judged nothing. The default, p50-sec/op, falls back on purpose: go test
// files have no percentiles.
func metricIn(metric string, tables ...*table) error {
	if metric == DefaultMetric || metric == "sec/op" {
		return nil
	}
	var have []string
	for _, t := range tables {
		for _, k := range t.order {
			if k.unit == metric {
				return nil
			}
			if !slices.Contains(have, k.unit) {
				have = append(have, k.unit)
			}
		}
	}
	return fmt.Errorf("--metric %s: neither file has that unit; want one they have: %s", metric, strings.Join(have, ", "))
}

// cellOrder lists every benchmark of either file, in order of first
// appearance.
func cellOrder(a, b *table) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range slices.Concat(a.order, b.order) {
		if !seen[k.name] {
			seen[k.name] = true
			out = append(out, k.name)
		}
	}
	return out
}

// judge compares one cell: its evidence (every unit), then its verdict on
// the deciding unit.
func judge(name string, old, nw *table, units benchfmt.UnitMetadataMap, d drift, o Options) Cell {
	c := Cell{Name: name}
	for _, unit := range unitsOf(name, old, nw) {
		k := rowKey{name, unit}
		c.Evidence = append(c.Evidence, compareRow(unit, old.values[k], nw.values[k], units, o))
	}
	if !old.names[name] || !nw.names[name] {
		c.Verdict, c.Why = Missing, "in "+map[bool]string{true: old.name, false: nw.name}[old.names[name]]+" only"
		c.Row = deciding(c.Evidence, o.Metric, false)
		return c
	}
	row := deciding(c.Evidence, o.Metric, true)
	c.Row = row
	switch {
	case row.Unit == "":
		c.Verdict, c.Lacks = Unsure, fmt.Sprintf("no %s or sec/op values in both files", o.Metric)
	case isFloor(name) && !o.Absolute:
		c.Verdict, c.Why = Reference, changeText(row, o.Alpha)
	case minUTestP(row.Old.N, row.New.N) >= o.Alpha:
		c.Verdict = Unsure
		c.Lacks = fmt.Sprintf("%d+%d runs: a U-test over runs cannot reach p < %v with fewer than %d a side (run more passes, or go test -count)",
			row.Old.N, row.New.N, o.Alpha, runsNeeded(o.Alpha))
	default:
		judgeChange(&c, d, o)
	}
	return c
}

// unitsOf lists the units the cell has in either file, in file order.
func unitsOf(name string, old, nw *table) []string {
	var out []string
	for _, t := range []*table{old, nw} {
		for _, k := range t.order {
			if k.name == name && !slices.Contains(out, k.unit) {
				out = append(out, k.unit)
			}
		}
	}
	return out
}

// deciding is the row of the metric, or of sec/op where the files lack
// it (as go test files without p50 do); empty when neither is there (in
// both files, when both).
func deciding(rows []Row, metric string, both bool) Row {
	for _, unit := range []string{metric, "sec/op"} {
		for _, r := range rows {
			if r.Unit == unit && (!both || r.Old.N > 0 && r.New.N > 0) {
				return r
			}
		}
	}
	return Row{}
}

func compareRow(unit string, old, next []float64, units benchfmt.UnitMetadataMap, o Options) Row {
	row := Row{Unit: unit, Better: direction(units, unit), P: 1}
	assume := units.GetAssumption(unit)
	th := &benchmath.Thresholds{CompareAlpha: o.Alpha}
	if len(old) > 0 {
		row.Old = Side{assume.Summary(benchmath.NewSample(old, th), o.Confidence), len(old)}
	}
	if len(next) > 0 {
		row.New = Side{assume.Summary(benchmath.NewSample(next, th), o.Confidence), len(next)}
	}
	if len(old) == 0 || len(next) == 0 {
		return row
	}
	row.DeltaPct = deltaPct(row.Old.Center, row.New.Center)
	if assume == benchmath.AssumeExact || minUTestP(len(old), len(next)) < o.Alpha {
		row.P = assume.Compare(benchmath.NewSample(old, th), benchmath.NewSample(next, th)).P
	}
	return row
}

// judgeChange decides a kernel cell: a change counts only when it is
// significant over runs, and past the threshold on its own and net of the
// drift of the floor measured beside it in the same nights (see drift)
// (and, with Options.Apart, the two medians' confidence intervals apart). The machine's
// drift alone never makes a cell slower, at the price that a slowdown a
// faster machine masked (+1% raw, +15% net) is not called one either.
// Per-launch cells take LatencyThreshold: their times include the host's
// wait for the device, which moves between nights far more than a batch.
func judgeChange(c *Cell, d drift, o Options) {
	th := o.Threshold
	if strings.Contains(c.Name, "/timing=per-launch") {
		th = o.LatencyThreshold
	}
	raw := decide(c.P, o.Alpha, c.DeltaPct, th, c.Better)
	c.Verdict, c.Why = raw, changeText(c.Row, o.Alpha)
	if o.Absolute {
		return
	}
	if ref, ratio, ok := d.reference(rowKey{c.Name, c.Unit}); ok {
		c.Ref, c.RefDeltaPct = ref, (ratio-1)*100
		c.NetDeltaPct = ((1+c.DeltaPct/100)/ratio - 1) * 100
		c.Why += fmt.Sprintf("; net of %s %+.1f%%", strings.ToLower(floorKind(ref)), c.NetDeltaPct)
		if net := decide(c.P, o.Alpha, c.NetDeltaPct, th, c.Better); net != raw {
			c.Verdict = Same
		}
	}
	if c.Verdict != Same && o.Apart && !apart(c.Old, c.New) {
		c.Verdict = Same
		c.Why += "; intervals overlap"
	}
}

// changeText is a row's change in a line: "+9.9% (p=0.002, 6+6 runs)".
func changeText(r Row, alpha float64) string {
	d := fmt.Sprintf("%+.1f%%", r.DeltaPct)
	if math.IsInf(r.DeltaPct, 0) {
		d = fmt.Sprintf("%+.0f%%", r.DeltaPct)
	}
	sig := ""
	if r.P >= alpha {
		sig = " ~"
	}
	return fmt.Sprintf("%s%s (p=%.3f, %d+%d runs)", d, sig, r.P, r.Old.N, r.New.N)
}

func floorKind(name string) string { kind, _, _ := strings.Cut(name, "/"); return kind }

// apart reports whether two sides' confidence intervals are disjoint. A
// change that stays within its own interval is noise a rerun shows, not a
// change.
func apart(a, b Side) bool { return a.Hi < b.Lo || b.Hi < a.Lo }

func deltaPct(old, next float64) float64 {
	switch {
	case old != 0:
		return (next - old) / math.Abs(old) * 100
	case next == old:
		return 0
	}
	return math.Copysign(math.Inf(1), next)
}
