package store

import (
	"bytes"
	"fmt"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
)

// Value judgement. A valid row's footprint is not compared with the
// reference bytes but judged by the layout's recipes (layout.Layout.Judge):
// a stored scale within the recipe's ulps, each code the rounding of x
// over the kernel's own stored scale (its neighbour accepted only at a
// rounding boundary), bf16 bit for bit, pad bytes by the layout's policy.
// Bytes the judgement accepts are not wrong at all, so no later stage can
// take a tolerated scale or code for a padding, stride or alias write;
// the bytes it rejects enter the classifier as wrong bytes, each wanting
// what its rule wants, and a value violation made of them says which rule
// failed and by how much.

// judgement is what value judgement found in one case: the findings of
// the valid rows that failed, and the finding each wrong byte belongs to.
type judgement struct {
	findings []rowFinding
	at       map[int]int      // pool offset → index into findings
	holds    map[slotRow]bool // holdsRow's verdicts
	dontCare [][]layout.Span  // per plane: the bytes no rule judges (pad bytes of the default policy)
}

type slotRow struct {
	slot int64
	row  int
}

// rowFinding is a finding of one valid row.
type rowFinding struct {
	row int
	layout.Finding
}

// Judgement is how a target judges values: its layout with the plugin's
// declared recipe applied, the mode, and the slot width the plugin
// declared. Results carry it so that a repro file records what the case
// was judged by and staged at.
type Judgement struct {
	Layout   *layout.Layout
	Mode     layout.Mode
	SlotBits int
}

// declaredLayout is l with the recipe the plugin declared for it in
// place of the layout's own. A declaration that does not fit the layout
// (a float32 rule for ue8m0 scales, an eps out of bounds, a recipe for a
// layout without fp8 fields) is an error naming the plugin and layout.
func declaredLayout(l *layout.Layout, d oracle.Declared, plugin string) (*layout.Layout, error) {
	l, err := declaredPads(l, d, plugin)
	if err != nil || d.Recipe == nil {
		return l, err
	}
	if !l.Quantized() {
		return nil, fmt.Errorf("plugin %s declares a recipe (%s) for layout %s, which has no fp8 fields: declare none there",
			plugin, d.Recipe, l.Name)
	}
	out, err := l.WithRecipe(d.Recipe)
	if err != nil {
		return nil, fmt.Errorf("plugin %s declares a recipe for layout %s that does not fit it: %w", plugin, l.Name, err)
	}
	return out, nil
}

// declaredPads is l with the pad policy the plugin declared over the
// layout's own: a kernel that never writes pad bytes declares keep and
// is held to it.
func declaredPads(l *layout.Layout, d oracle.Declared, plugin string) (*layout.Layout, error) {
	out, err := l.WithPadPolicy(d.PadPolicy)
	if err != nil {
		return nil, fmt.Errorf("plugin %s declares pad policy %q for layout %s: %w", plugin, d.PadPolicy, l.Name, err)
	}
	return out, nil
}

// judgeRow judges valid row i's footprint (spans, holding got) and
// returns its wrong bytes: none when the row passes.
func (v *classifier) judgeRow(i int, spans []layout.Span, got [][]byte) []wrongByte {
	sc := v.sc
	var kept []layout.Finding
	if v.keeps() {
		kept = sc.Layout.JudgeKept(got, v.before(spans))
	}
	if len(kept) == 0 && v.asEncoded(got, sc.records[i]) {
		return nil // the reference encoding: the common case, and it passes
	}
	var out []wrongByte
	for _, f := range append(sc.Layout.JudgeWith(sc.rows[i], sc.Inputs, got, sc.Mode), kept...) {
		k := len(v.judged.findings)
		v.judged.findings = append(v.judged.findings, rowFinding{row: i, Finding: f})
		for j, at := range f.Bytes {
			if b := got[f.PieceOf(j)][at]; b != f.Want[j] {
				off := spans[f.PieceOf(j)].Off + at
				out = append(out, wrongByte{off: off, got: b, want: f.Want[j], row: i})
				if v.judged.at == nil {
					v.judged.at = map[int]int{}
				}
				v.judged.at[off] = k
			}
		}
	}
	return out
}

// keeps reports whether the layout has pad bytes a store must leave as
// they were.
func (v *classifier) keeps() bool {
	for p := range v.sc.Layout.NumPieces() {
		if len(v.sc.Layout.Kept(p)) > 0 {
			return true
		}
	}
	return false
}

// before is what a footprint held before the store: the background.
func (v *classifier) before(spans []layout.Span) [][]byte {
	out := make([][]byte, len(spans))
	for p, sp := range spans {
		out[p] = v.sc.Region.Background(v.sc.Seed, sp.Off, sp.Len)
	}
	return out
}

// untouchedRow reports whether every plane of a footprint still holds the
// background: the kernel never wrote the row.
func (v *classifier) untouchedRow(spans []layout.Span, got [][]byte) bool {
	for p, sp := range spans {
		if !bytes.Equal(got[p], v.sc.Region.Background(v.sc.Seed, sp.Off, sp.Len)) {
			return false
		}
	}
	return true
}

// asEncoded reports whether got holds the reference record ref on every
// byte the layout cares about: pad bytes a kernel may leave as they were
// (DeepSeek-V4's) need no judgement.
func (v *classifier) asEncoded(got, ref [][]byte) bool {
	for p := range got {
		if bytes.Equal(got[p], ref[p]) {
			continue
		}
		at := 0
		for _, sp := range v.dontCare(p) {
			if !bytes.Equal(got[p][at:sp.Off], ref[p][at:sp.Off]) {
				return false
			}
			at = sp.End()
		}
		if !bytes.Equal(got[p][at:], ref[p][at:]) {
			return false
		}
	}
	return true
}

// dontCare are plane p's don't-care spans, in record order.
func (v *classifier) dontCare(p int) []layout.Span {
	if v.judged.dontCare == nil {
		v.judged.dontCare = make([][]layout.Span, v.sc.Layout.NumPieces())
		for q := range v.judged.dontCare {
			v.judged.dontCare[q] = v.sc.Layout.DontCare(q)
		}
	}
	return v.judged.dontCare[p]
}

// holdsRow reports whether slot's footprint holds row i's data as the
// recipe accepts it: a padded row written over a live slot by a kernel
// whose arithmetic differs from the reference's, byte for byte, is still
// that padded row's write.
func (v *classifier) holdsRow(slot int64, i int) bool {
	k := slotRow{slot, i}
	if held, ok := v.judged.holds[k]; ok {
		return held
	}
	spans := v.sc.Layout.Footprint(slot)
	got := make([][]byte, len(spans))
	for p, sp := range spans {
		got[p] = v.got(pool.Window{Off: sp.Off, Len: sp.Len})
	}
	held := len(v.sc.Layout.JudgeWith(v.sc.rows[i], v.sc.Inputs, got, v.sc.Mode)) == 0
	if v.judged.holds == nil {
		v.judged.holds = map[slotRow]bool{}
	}
	v.judged.holds[k] = held
	return held
}

// findingAt is the index of the finding wrong byte off belongs to, or -1.
func (v *classifier) findingAt(off int) int {
	if k, ok := v.judged.at[off]; ok {
		return k
	}
	return -1
}

// findingDetail is the finding wrong byte off belongs to, in one line:
// which rule failed and by how much ("" for a byte no finding holds).
func (v *classifier) findingDetail(off int) string {
	if k := v.findingAt(off); k >= 0 {
		return v.judged.findings[k].String()
	}
	return ""
}

// groupKey names one quantized group of one row: an e4m3 field and its
// group index.
type groupKey struct {
	row   int
	field string
	group int
}

// settleEps keeps the "bytes match eps X: declare it" note only where one
// eps explains every failing group of the case: each finding is a scale
// finding with an eps match, or a code finding of such a group, and the
// matches agree. A row whose bytes an eps explains beside a row with
// another bug is no case for declaring an eps: the note would hide the
// bug behind a declaration.
func (j *judgement) settleEps(l *layout.Layout) {
	if len(j.findings) == 0 {
		return
	}
	matches, ok := j.epsMatches(l)
	common, agree := commonEps(matches)
	for k := range j.findings {
		f := &j.findings[k]
		switch {
		case f.Eps == nil:
		case ok && agree:
			f.Eps = common
		default:
			f.Eps = nil
		}
	}
}

// epsMatches are the eps matches of the case's failing groups, and
// whether every finding belongs to a group one explains.
func (j *judgement) epsMatches(l *layout.Layout) ([]layout.EpsMatch, bool) {
	scaleOf := map[string]string{} // scale field → its e4m3 field
	for _, f := range l.Fields {
		if f.Of != "" {
			scaleOf[f.Name] = f.Of
		}
	}
	explained := map[groupKey]bool{}
	var matches []layout.EpsMatch
	for _, f := range j.findings {
		if f.Rule == layout.RuleScale && f.Eps != nil {
			explained[groupKey{f.row, scaleOf[f.Field], f.Group}] = true
			matches = append(matches, *f.Eps)
		}
	}
	for _, f := range j.findings {
		switch {
		case f.Rule == layout.RuleScale && f.Eps != nil:
		case f.Rule == layout.RuleCode && explained[groupKey{f.row, f.Field, f.Group}]:
		default:
			return nil, false
		}
	}
	return matches, true
}

// commonEps is the one eps all matches allow, if there is one: a match
// without UpTo allows its eps alone (the floor decides that group's
// scale); one with UpTo any eps up to its group's max |x|.
func commonEps(ms []layout.EpsMatch) (*layout.EpsMatch, bool) {
	if len(ms) == 0 {
		return nil, false
	}
	pick := ms[0]
	for _, m := range ms {
		if m.UpTo == 0 {
			pick = m
			break
		}
	}
	upTo := pick.UpTo
	for _, m := range ms {
		switch {
		case float32(m.Eps) == float32(pick.Eps) && m.UpTo == 0:
		case m.UpTo > 0 && float32(pick.Eps) <= float32(m.UpTo):
			if pick.UpTo > 0 {
				upTo = min(upTo, m.UpTo)
			}
		default:
			return nil, false
		}
	}
	if pick.UpTo == 0 {
		upTo = 0
	}
	return &layout.EpsMatch{Eps: pick.Eps, UpTo: upTo}, true
}
