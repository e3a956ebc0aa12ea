package read

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/target"
)

// readRun is what one call of a case left: its out windows, the pool's
// delta (the harness's key writes included), and what it did to staging.
type readRun struct {
	out     Output
	delta   oracle.Delta
	staging []oracle.Violation
}

// run writes the case's keys, stages its inputs, calls Case, and collects
// what the call left; then it puts pool and staging back to the
// background, also after a plugin fault, so the next case starts clean.
func (t *Target) run(ctx context.Context, rc *Oracle) (readRun, error) {
	c := rc.Case
	if err := t.fits(c); err != nil {
		return readRun{}, err
	}
	if !t.Plugin.AttachedTo(t) { // another target of the same plugin attached since
		if err := t.Attach(ctx); err != nil {
			return readRun{}, err
		}
	}
	in, outs := t.staging.inputs(rc), t.staging.outputs(c)
	var run readRun
	err := t.prepare(rc, append(in, outs...))
	if err == nil {
		err = Read(ctx, t.Plugin, t.staging.request(c))
	}
	if err == nil {
		run.out, run.staging, err = t.collect(in, outs)
	}
	delta, rerr := t.restore()
	run.delta = delta
	if rerr != nil {
		return run, errors.Join(err, rerr)
	}
	return run, err
}

// fits checks a case against the staging the target was sized for.
func (t *Target) fits(c *Case) error {
	if len(c.Requests) > t.MaxRequests || c.TotalTokens() > t.MaxTokens || c.K > t.MaxK {
		return fmt.Errorf("case %v exceeds the target's staging (%d requests, %d tokens, k %d)", c, t.MaxRequests, t.MaxTokens, t.MaxK)
	}
	return nil
}

// prepare writes the keys into their footprints and the staged segments.
func (t *Target) prepare(rc *Oracle, segs []target.Segment) error {
	base := t.Region().Pool.Off
	for _, w := range rc.Writes() {
		for p, sp := range w.Spans {
			if err := t.Mem().WriteAt(w.Records[p], base+sp.Off); err != nil {
				return err
			}
		}
	}
	for _, s := range segs {
		if err := t.Mem().WriteAt(s.Data, s.Off); err != nil {
			return err
		}
	}
	return nil
}

// collect reads the out windows and judges staging: inputs must read back
// as staged, and nothing outside them and the out windows may change.
func (t *Target) collect(in, outs []target.Segment) (Output, []oracle.Violation, error) {
	got := make([][]byte, len(outs))
	for i, s := range outs {
		got[i] = make([]byte, len(s.Data))
		if err := t.Mem().ReadAt(got[i], s.Off); err != nil {
			return Output{}, nil, err
		}
	}
	var vs []oracle.Violation
	for _, s := range in {
		b := make([]byte, len(s.Data))
		if err := t.Mem().ReadAt(b, s.Off); err != nil {
			return Output{}, nil, err
		}
		if i := oracle.FirstDiff(s.Data, b); i >= 0 {
			vs = append(vs, StagingViolation(ReadOnly, s.Name, i, clip(s.Data[i:]), clip(b[i:])))
		}
	}
	stray, err := t.strayStaging(append(in, outs...))
	return decodeOutput(got[0], got[1]), append(vs, stray...), err
}

// strayStaging reports changed staging bytes outside the segments.
func (t *Target) strayStaging(segs []target.Segment) ([]oracle.Violation, error) {
	ws, err := t.Mem().Changed(t.Pools.Staging)
	if err != nil {
		return nil, err
	}
	var vs []oracle.Violation
	for _, w := range ws {
		for _, gap := range outside(w, segs) {
			got := make([]byte, gap.Len)
			if err := t.Mem().ReadAt(got, gap.Off); err != nil {
				return nil, err
			}
			off := gap.Off - t.Pools.Staging.Off
			want := pool.Background(uint64(t.Seed), off, gap.Len)
			vs = append(vs, StagingViolation(Scratch, "free space", off, clip(want), clip(got)))
		}
	}
	return vs, nil
}

// outside returns the parts of w no target.Segment covers.
func outside(w pool.Window, segs []target.Segment) []pool.Window {
	var out []pool.Window
	for a := w.Off; a < w.End(); a++ {
		if !covered(a, segs) {
			out = pool.Extend(out, a, 1)
		}
	}
	return out
}

func covered(a int, segs []target.Segment) bool {
	for _, s := range segs {
		if a >= s.Off && a < s.Off+len(s.Data) {
			return true
		}
	}
	return false
}

// restore captures the pool's delta and puts pool and staging back.
func (t *Target) restore() (oracle.Delta, error) {
	r := t.Region()
	d, err := oracle.Capture(t.Mem(), r)
	if err != nil {
		return d, err
	}
	abs := make([]pool.Window, len(d.Windows))
	for i, w := range d.Windows {
		abs[i] = pool.Window{Off: w.Off + r.Pool.Off, Len: w.Len}
	}
	staged, err := t.Mem().Changed(t.Pools.Staging)
	if err != nil {
		return d, err
	}
	return d, t.Mem().Reset(append(abs, staged...))
}

func clip(b []byte) []byte { return b[:min(len(b), oracle.MaxShown)] }
