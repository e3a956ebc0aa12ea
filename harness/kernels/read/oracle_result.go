package read

import (
	"fmt"
	"math"
	"strings"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
)

// Output is what a read left in its out windows, Requests × K each.
type Output struct {
	Slots  []int64
	Scores []float32
}

// CheckResult judges every request's out windows against the reference;
// a request the contained policy covers (Contained), for form alone.
func (rc *Oracle) CheckResult(out Output) []oracle.Violation {
	var vs []oracle.Violation
	for r := range rc.Case.Requests {
		a := rc.request(r, out)
		if rc.Contained(r) {
			vs = append(vs, a.contained()...)
			continue
		}
		vs = append(vs, a.judge()...)
	}
	return vs
}

// contained judges the answer of a request that holds ±Inf or NaN under
// the contained policy: any ranking of its own list, any scores, slot -1
// anywhere; but a slot from outside its list, or one slot twice, is a
// read of what the request does not hold, whatever its values.
func (a *answer) contained() []oracle.Violation {
	const why = " (its query or keys hold ±Inf or NaN: under the contained policy its ranking and scores are free, not its slots)"
	for i, s := range a.slots {
		_, listed := a.want[s]
		switch j, dup := a.rank[s]; {
		case s == -1:
		case !listed:
			return []oracle.Violation{a.violation(TopK, s, fmt.Sprintf("rank %d: slot %d is not in the request's list (%s)%s", i, s, a.rc.whose(s), why))}
		case dup:
			return []oracle.Violation{a.violation(TopK, s, fmt.Sprintf("rank %d: slot %d again (first at rank %d)%s", i, s, j, why))}
		default:
			a.rank[s] = i
		}
	}
	return nil
}

// answer is one request's out windows and what the judge learns of them.
type answer struct {
	rc     *Oracle
	r, m   int // request, results wanted: min(k, list length)
	slots  []int64
	scores []float32
	ref    []RefToken
	want   map[int64]RefToken // the list's tokens by slot
	rank   map[int64]int      // returned slot → rank
}

func (rc *Oracle) request(r int, out Output) *answer {
	k := rc.Case.K
	a := &answer{rc: rc, r: r, slots: out.Slots[r*k : (r+1)*k], scores: out.Scores[r*k : (r+1)*k],
		ref: rc.refs[r], want: map[int64]RefToken{}, rank: map[int64]int{}}
	a.m = min(k, len(a.ref))
	for _, t := range a.ref {
		a.want[t.Slot] = t
	}
	return a
}

// judge runs the checks. A malformed answer (wrong slots, wrong padding)
// is reported alone: nothing else about it means much.
func (a *answer) judge() []oracle.Violation {
	if slot, msg := a.structure(); msg != "" {
		return []oracle.Violation{a.violation(TopK, slot, msg)}
	}
	var vs []oracle.Violation
	if slot, msg := a.scoresOff(); msg != "" {
		vs = append(vs, a.violation(Score, slot, msg))
	}
	for _, check := range []func() (int64, string){a.order, a.set, a.ties} {
		if slot, msg := check(); msg != "" {
			return append(vs, a.violation(TopK, slot, msg))
		}
	}
	return vs
}

// structure checks that ranks 0..m-1 hold distinct slots of the list and
// the rest is padding.
func (a *answer) structure() (int64, string) {
	for i, s := range a.slots {
		switch _, listed := a.want[s]; {
		case i >= a.m && (s != -1 || !isNaN(a.scores[i])):
			return s, fmt.Sprintf("rank %d: want padding (slot -1, score NaN) after %d results, got slot %d score %g", i, a.m, s, a.scores[i])
		case i >= a.m:
		case s == -1:
			return s, fmt.Sprintf("rank %d is padding, but the list has %d tokens: want %d results", i, len(a.ref), a.m)
		case !listed:
			return s, fmt.Sprintf("rank %d: slot %d is not in the request's list (%s)", i, s, a.rc.whose(s))
		default:
			if j, dup := a.rank[s]; dup {
				return s, fmt.Sprintf("rank %d: slot %d again (first at rank %d)", i, s, j)
			}
			a.rank[s] = i
		}
	}
	return 0, ""
}

// whose says where a foreign slot comes from: an unmasked tail reads the
// next request's tokens.
func (rc *Oracle) whose(s int64) string {
	if r, ok := rc.owner[s]; ok {
		return fmt.Sprintf("request %d's token", r)
	}
	return "in no list of the case"
}

// scoresOff finds the first returned score outside its tolerance.
func (a *answer) scoresOff() (int64, string) {
	for i, s := range a.slots[:a.m] {
		t, g := a.want[s], float64(a.scores[i])
		if isNaN(a.scores[i]) || math.Abs(g-t.Score) > t.Tol {
			return s, fmt.Sprintf("rank %d slot %d: score %.9g, want %.9g ± %.3g", i, s, g, t.Score, t.Tol)
		}
	}
	return 0, ""
}

// order wants the returned scores non-increasing and, where equal, the
// lower slot first.
func (a *answer) order() (int64, string) {
	for i := 0; i+1 < a.m; i++ {
		x, y := a.scores[i], a.scores[i+1]
		if x < y || x == y && a.slots[i] > a.slots[i+1] {
			return a.slots[i+1], fmt.Sprintf("ranks %d and %d out of order: slot %d (%g) before slot %d (%g); want the higher score first, then the lower slot",
				i, i+1, a.slots[i], x, a.slots[i+1], y)
		}
	}
	return 0, ""
}

// set finds returned tokens a left-out token beats beyond both tolerances.
// Exact layouts allow none; quantized ones a Jaccard index of at least
// Options.Jaccard, near ties counting as matches.
func (a *answer) set() (int64, string) {
	best, ok := a.bestLeftOut()
	if !ok {
		return 0, ""
	}
	var worse []int
	for i, s := range a.slots[:a.m] {
		if t := a.want[s]; t.Score+t.Tol < best.Score-best.Tol {
			worse = append(worse, i)
		}
	}
	if len(worse) == 0 {
		return 0, ""
	}
	matched := a.m - len(worse)
	jac := float64(matched) / float64(2*a.m-matched)
	if !a.rc.Exact && jac >= a.rc.Options.Jaccard {
		return 0, ""
	}
	i := worse[0]
	msg := fmt.Sprintf("slot %d (%.9g) is left out, but slot %d (%.9g) is returned at rank %d", best.Slot, best.Score, a.slots[i], a.want[a.slots[i]].Score, i)
	if !a.rc.Exact {
		msg += fmt.Sprintf("; top-%d Jaccard %.3f < %.3f", a.m, jac, a.rc.Options.Jaccard)
	}
	return a.slots[i], msg
}

// bestLeftOut is the left-out token with the highest lower bound.
func (a *answer) bestLeftOut() (RefToken, bool) {
	var best RefToken
	found := false
	for _, t := range a.ref {
		if _, in := a.rank[t.Slot]; !in && (!found || t.Score-t.Tol > best.Score-best.Tol) {
			best, found = t, true
		}
	}
	return best, found
}

// ties wants, of tokens that certainly tie, the lower slots returned.
// Tokens certainly tie when any kernel must give them bit-equal scores:
// their keys are bit-identical (a kernel scores a token the same wherever
// it sits), or every product of both is zero (they score exactly 0).
func (a *answer) ties() (int64, string) {
	lowest := map[int]int64{} // tie class → lowest left-out slot in it
	for _, t := range a.ref {
		c := a.tieClass(t)
		if _, in := a.rank[t.Slot]; !in {
			if s, ok := lowest[c]; !ok || t.Slot < s {
				lowest[c] = t.Slot
			}
		}
	}
	for i, s := range a.slots[:a.m] {
		if low, ok := lowest[a.tieClass(a.want[s])]; ok && low < s {
			return s, fmt.Sprintf("rank %d: slot %d is returned, but slot %d ties with it exactly and is left out; equal scores go to the lower slot", i, s, low)
		}
	}
	return 0, ""
}

// tieClass is the key's identity, or -1 for tokens that score exactly 0.
func (a *answer) tieClass(t RefToken) int {
	if t.Zero {
		return -1
	}
	return a.rc.keys[t.Slot].id
}

// violation builds a result or score violation of the request, its detail
// naming the expected and returned results and where they first differ.
func (a *answer) violation(kind oracle.Kind, slot int64, msg string) oracle.Violation {
	detail := fmt.Sprintf("request %d (%d tokens, k %d): %s; expected %s, returned %s%s",
		a.r, len(a.ref), a.rc.Case.K, msg, a.expected(), a.returned(), a.firstDifference())
	page, _ := layout.FloorDiv(int(slot), a.rc.Layout.PageSize)
	return oracle.Violation{Kind: kind, Row: a.r, Slot: slot, Page: int64(page), HasSlot: slot >= 0, Field: "request", Detail: detail}
}

// shownResults bounds the results a detail lists.
const shownResults = 8

func (a *answer) expected() string {
	parts := make([]string, 0, a.m)
	for _, t := range a.ref[:min(a.m, shownResults)] {
		parts = append(parts, fmt.Sprintf("%d (%.6g)", t.Slot, t.Score))
	}
	return bracket(parts, a.m)
}

func (a *answer) returned() string {
	n := len(a.slots)
	for n > 0 && a.slots[n-1] == -1 && isNaN(a.scores[n-1]) {
		n--
	}
	parts := make([]string, 0, n)
	for i := range min(n, shownResults) {
		parts = append(parts, fmt.Sprintf("%d (%.6g)", a.slots[i], a.scores[i]))
	}
	return bracket(parts, n)
}

func bracket(parts []string, n int) string {
	s := "[" + strings.Join(parts, " ")
	if n > len(parts) {
		s += fmt.Sprintf(" …%d more", n-len(parts))
	}
	return s + "]"
}

// firstDifference names the first rank where the returned slot is not the
// reference's, with both scores.
func (a *answer) firstDifference() string {
	for i, s := range a.slots {
		want := int64(-1)
		if i < a.m {
			want = a.ref[i].Slot
		}
		if s == want {
			continue
		}
		w := "padding"
		if want >= 0 {
			w = fmt.Sprintf("slot %d score %.9g", want, a.ref[i].Score)
		}
		return fmt.Sprintf("; first difference at rank %d: expected %s, returned slot %d score %.9g", i, w, s, a.scores[i])
	}
	return ""
}

func isNaN(f float32) bool { return f != f }
