package store

import (
	"math/rand"

	"github.com/kvharness/kvharness/harness/oracle"
)

// Races. A case whose padded row's stale slot is a valid row's slot has
// two writers of that slot in one call: a pad-unaware kernel writes both,
// and which lands last is up to the machine (a GPU decides it each run).
// The bytes then show the padded row's data in some runs and the valid
// row's in others. That is the incident's exact signature, the bug in
// every run whichever write won, and it is reported as such: "padding
// (race)", with both rows and the slot, never as a flaky value or a tie
// between kinds. The same holds for two valid rows that write one slot (a
// row stored into another's).

// race names the race a unit of wrong bytes is, if it is one: the unit's
// slot is a valid row's, and an explanation that accounts for its bytes
// (accounts: one byte in 256 matches by chance) is another row's record
// written there. It returns the explanation with
// the race attached, or false.
func (v *classifier) race(u unit, cands []explanation) (explanation, bool) {
	owner, valid := v.sc.validSlot[u.slot]
	if !u.owned || !valid || !u.inPool(v.sc.Region.Pool.Len) {
		return explanation{}, false
	}
	var best *explanation
	for i := range cands {
		c := &cands[i]
		writes := c.kind == oracle.Padding && v.sc.Case.Loc[c.row] == u.slot // a padded row aimed at the slot
		if (writes || c.kind == oracle.Value && c.row == owner && c.by != "") && accounts(c.n, len(u.bytes)) && (best == nil || c.n > best.n) {
			best = c
		}
	}
	if best == nil {
		return explanation{}, false
	}
	e := *best
	e.tie = ""
	writer := e.by // "padded row 7", or "valid row 3" for another valid row's record in the owner's slot (otherRow)
	e.race = &oracle.Race{Slot: u.slot, Won: e.writer, Lost: owner, Note: writer + " and valid row " + itoa(owner)}
	both := writer + " and valid row " + itoa(owner) + " both write slot " + i64toa(u.slot) + " in this call, and "
	if e.kind == oracle.Padding {
		e.detail = both + "the padded write landed last"
	} else {
		e.detail = joinDetail(e.detail, both+writer+"'s write landed last")
	}
	return e, true
}

// Race implements property.Racer: the failure leads with a race.
func (r *Result) Race() bool { return r.RaceViolation() != nil }

// RaceViolation is the violation the result leads with, when it is a
// race; nil otherwise.
func (r *Result) RaceViolation() *oracle.Violation {
	p := r.Primary()
	for i, v := range r.Violations {
		if v.Kind == p {
			if v.Race != nil {
				return &r.Violations[i]
			}
			return nil
		}
	}
	return nil
}

// liveOutside draws a padded row's stale slot among the live slots of
// other requests: slots earlier cases stored to (recent), or any slot,
// never one a valid row of this batch owns. A pad-unaware kernel then
// overwrites a slot no write of the call races, and the corruption shows
// in every run, where a target shared with a valid row shows it only when
// the padded write lands last.
func (g *Gen) liveOutside(rng *rand.Rand, valid []int64) int64 {
	taken := make(map[int64]bool, len(valid))
	for _, s := range valid {
		taken[s] = true
	}
	for range 8 {
		s := g.anySlot(rng)
		if len(g.recent) > 0 && rng.Intn(3) > 0 {
			s = g.recent[rng.Intn(len(g.recent))]
		}
		if !taken[s] {
			return s
		}
	}
	return g.anySlot(rng) // a dense batch: a valid row's slot perhaps, a race reported as one
}

// anySlot is a slot cases may name, uniformly: of the whole pool, or of
// its live windows when the pool reaches far (Gen.Live).
func (g *Gen) anySlot(rng *rand.Rand) int64 {
	if g.Live == nil {
		return rng.Int63n(int64(g.Slots))
	}
	return g.Live.Random(rng)
}

// raceIn is the race the repeat run of a case showed that its first run
// did not: two writers of one slot, the wrong one last in the repeat
// only. The runs then differ, and without it the failure would lead with
// determinism, a hedge for what is a race; so the race is reported, from
// the run that showed it, unless the first run showed one already. shown
// says whether the repeat run showed a race at all.
func raceIn(sc *Oracle, again oracle.Delta, first []oracle.Violation) (out []oracle.Violation, shown bool) {
	before := hasRace(first)
	for _, v := range sc.Check(again) {
		if v.Race != nil {
			shown = true
			if !before {
				v.Detail += " (in the case's second run; the first run's write order hid it)"
				out = append(out, v)
			}
		}
	}
	return out, shown
}

func hasRace(vs []oracle.Violation) bool {
	for _, v := range vs {
		if v.Race != nil {
			return true
		}
	}
	return false
}

// RaceShown implements property.Racer: of the case's two runs (as given,
// and again), those that showed a race.
func (r *Result) RaceShown() (hits, runs int) { return r.raceHits, 2 }
