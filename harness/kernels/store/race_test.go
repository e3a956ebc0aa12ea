package store

import (
	"context"
	"math/rand"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/oracle/oracletest"
	"github.com/kvharness/kvharness/harness/property"
)

// fixedSystem checks one case, drawn again and again, on a target: the
// search of a run whose generator happened upon it.
type fixedSystem struct {
	tg *Target
	c  *Case
}

func (s fixedSystem) Draw(*rand.Rand) *Case         { return s.c }
func (s fixedSystem) Shrink(c *Case) []*Case        { return Shrink(c) }
func (s fixedSystem) Restart(context.Context) error { return nil }
func (s fixedSystem) Check(ctx context.Context, c *Case) (*Result, error) {
	return s.tg.Check(ctx, c)
}

// raceCase is the issue's: C=8 n=7, padded row 7's stale slot is valid
// row 1's.
func raceCase() *Case { return storeCase(PadCount, 7, 11, 40, 97, 130, 200, 3000, 4001, 40) }

// TestPaddingRaceIsNamed: a pad-unaware store whose padded row shares a
// slot with a valid row leaves the bytes to whichever write lands last.
// With the write order left to chance (bf16scatter goroutines) and fixed
// (bf16scatter, the padded row always last), the failure is a race,
// never flaky: its violation is "padding (race)" naming both rows and the
// slot, its case is run RaceRuns times and the runs that showed it
// counted, and shrinking (each candidate given RaceRuns runs) ends at the
// padded row alone aimed at another request's slot, which fails every
// run.
func TestPaddingRaceIsNamed(t *testing.T) {
	for _, variant := range []string{"goroutines", "", "torchscatter"} {
		t.Run("variant="+variant, func(t *testing.T) {
			var tg *Target
			if variant == "torchscatter" { // the Python twin, numpy on the cpu backend: the padded row last, always
				tg, variant = raceTarget(t, variant, arena.SHM{}), ""
			} else {
				tg = openTarget(t, "bf16scatter", "bf16", variant)
			}
			o := property.Run(context.Background(), fixedSystem{tg, raceCase()}, property.Config{Cases: 100, Seed: 1})
			f := o.Failure
			if f == nil {
				t.Fatalf("no failure in %d runs of the race", o.Cases)
			}
			t.Logf("found at run %d: the padded write landed last in %d of %d runs; shrunk to %v", o.Cases, f.RaceHits, f.RaceRuns, f.Case)
			if f.Flaky || !f.Race || f.Property != oracle.Padding || f.RaceRuns != 2*property.RaceRuns || f.RaceHits < 1 || f.RaceHits > f.RaceRuns {
				t.Fatalf("failure %+v: want a padding race, not flaky, counted over %d runs (two a check)", f, 2*property.RaceRuns)
			}
			if variant == "" && f.RaceHits != f.RaceRuns {
				t.Errorf("a fixed write order: the padded row lands last every run, not %d of %d", f.RaceHits, f.RaceRuns)
			}
			v := f.Original.RaceViolation()
			if v == nil || v.KindText() != "padding (race)" || v.Race.Won != 7 || v.Race.Lost != 1 || v.Race.Slot != 40 || v.Tie != "" ||
				!strings.Contains(v.String(), "padded row 7 and valid row 1 both write slot 40") {
				t.Errorf("violation %v: want padding (race), padded row 7 over valid row 1 at slot 40, no tie", v)
			}
			if c := f.Case; !f.RaceShrunk || c.Capacity() != 1 || c.Valid != 0 || f.Minimal.Race() {
				t.Errorf("shrunk to %v (race shrunk %v): want the padded row alone, failing without a race", c, f.RaceShrunk)
			}
		})
	}
}

// TestAliasRaceIsNamed: a valid row's record in another valid row's slot
// is a race between the two writers of that slot, named as one; a padded
// row's whole record in a valid row's slot too, where one byte of it
// stays a tie (one byte cannot tell a race from a value bug).
func TestAliasRaceIsNamed(t *testing.T) {
	f := newFixture(t, "bf16", oracleCase(PadNone, 2, 5, 9))
	f.storeValid()
	f.store(0, 9) // row 0 written into row 1's slot too, and landed last there
	var race *oracle.Violation
	vs := f.check()
	for i := range vs {
		if vs[i].Race != nil {
			race = &vs[i]
		}
	}
	if race == nil || race.Race.Won != 0 || race.Race.Lost != 1 || race.Race.Slot != 9 || !strings.Contains(race.KindText(), "(race)") {
		t.Fatalf("violations %v: want slot 9 named a race of valid rows 0 and 1", vs)
	}
	f = newFixture(t, "bf16", oracleCase(PadCount, 1, 9, 9))
	f.storeValid()
	f.store(1, 9) // the padded row's whole record over the valid row's
	v := oracletest.Only(t, f.check(), oracle.Padding)
	if v.Race == nil || v.Race.Won != 1 || v.Race.Lost != 0 || v.Tie != "" {
		t.Errorf("violation %v: want padding (race) of padded row 1 over valid row 0, no tie", v)
	}
}

// TestGenPrefersLiveSlotsOutside: the count convention's padded rows aim,
// most of the time, at live slots outside the batch (the corruption then
// shows every run) and only now and then at a valid row's slot of the same
// batch (a race).
func TestGenPrefersLiveSlotsOutside(t *testing.T) {
	g := &Gen{Slots: 4096, PageSize: 64, Padding: PadCount, MaxCapacity: 64}
	rng := rand.New(rand.NewSource(1))
	padded, racing := 0, 0
	for range 5000 {
		c := g.Draw(rng)
		valid := map[int64]bool{}
		for _, s := range c.Loc[:c.Valid] {
			valid[s] = true
		}
		for _, s := range c.Loc[c.Valid:] {
			padded++
			if valid[s] {
				racing++
			}
		}
	}
	share := float64(racing) / float64(padded)
	t.Logf("%d of %d padded rows (%.1f%%) aim at a valid row's slot of their batch", racing, padded, 100*share)
	if share > 0.15 || racing == 0 {
		t.Errorf("%.1f%% of padded rows race a valid row; want some, and under 15%%", 100*share)
	}
}
