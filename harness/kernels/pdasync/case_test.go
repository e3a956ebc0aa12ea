package pdasync

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/pd"
)

// baseCase is a small valid case: two rooms over one layer, the second
// reusing the first's pages, a compacted page table.
func baseCase() *Case {
	zero := 0
	g := pd.DefaultGeometry(1, 8)
	return &Case{Geometry: g, PageTable: []int64{3, 1, 2, 0, 4, 5, 7, 6},
		Rooms: []Room{
			{ID: 7, Src: []int64{0, 1}, Virt: []int64{0, 1}, Components: []Component{
				{Buffers: []int{0, 1}, Handles: []Handle{{0, 1}, {1, 1}}}, {Buffers: []int{2}, Handles: []Handle{{0, 2}}}}},
			{ID: 9, Src: []int64{2}, Virt: []int64{0}, After: &zero, Components: []Component{{Buffers: []int{0, 1, 2}, Handles: []Handle{{0, 1}}}}},
		},
		Steps: []Step{Release(HandleRef{0, 0, 1}), Abort(0), Deliver(0, 1, DeliverComponent), DeliverEverything(), Poll(), Fail(HandleRef{1, 0, 0})}}
}

func TestValidateAcceptsAndRejects(t *testing.T) {
	if err := baseCase().Validate(0); err != nil {
		t.Fatalf("base case: %v", err)
	}
	one := 1
	for _, tc := range []struct {
		name, want string
		edit       func(c *Case)
	}{
		{"no rooms", "0 rooms", func(c *Case) { c.Rooms = nil }},
		{"table not a permutation", "want a permutation", func(c *Case) { c.PageTable[1] = 3 }},
		{"table too short", "page table of 2 entries", func(c *Case) { c.PageTable = c.PageTable[:2] }},
		{"duplicate id", "id 7 used twice", func(c *Case) { c.Rooms[1].ID = 7 }},
		{"source page twice", "already belongs to room 0", func(c *Case) { c.Rooms[1].Src[0] = 1 }},
		{"virtual page twice", "twice in the room", func(c *Case) { c.Rooms[0].Virt[1] = 0 }},
		{"lists differ", "1 virtual pages", func(c *Case) { c.Rooms[0].Virt = c.Rooms[0].Virt[:1] }},
		{"after itself", "want an earlier room", func(c *Case) { c.Rooms[1].After = &one }},
		{"shared pages, no order", "share decode pages", func(c *Case) { c.Rooms[1].After = nil }},
		{"buffer twice", "in two components", func(c *Case) { c.Rooms[0].Components[1].Buffers = []int{1, 2} }},
		{"buffer in none", "in no component", func(c *Case) {
			c.Rooms[0].Components[1].Buffers = nil
			c.Rooms[0].Components = c.Rooms[0].Components[:1]
		}},
		{"handles gap", "consecutive ranges", func(c *Case) { c.Rooms[0].Components[0].Handles[1].First = 2 }},
		{"handles short", "cover 1 of the room's 2 pages", func(c *Case) { c.Rooms[0].Components[1].Handles[0].Pages = 1 }},
		{"step on no handle", "no handle h0.0.2", func(c *Case) { c.Steps[0] = Release(HandleRef{0, 0, 2}) }},
		{"abort no room", "no room 5", func(c *Case) { c.Steps[1] = Abort(5) }},
		{"deliver no component", "no component 3 of room 1", func(c *Case) { c.Steps[2] = Deliver(1, 3, DeliverAll) }},
	} {
		c := baseCase()
		tc.edit(c)
		err := c.Validate(0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", tc.name, err, tc.want)
		}
	}
}

func TestStepText(t *testing.T) {
	for _, s := range baseCase().Steps {
		back, err := ParseStep(s.String())
		if err != nil || back != s {
			t.Errorf("%q parses to %+v, %v", s, back, err)
		}
	}
	for _, bad := range []string{"", "release", "release h0.0", "release h0.0.0 now", "fail x", "poll 1", "deliver r0.c0",
		"deliver r0.c0 some", "deliver everything", "abort 0", "abort r-", "jump h0.0.0", "release h00.0.0"} {
		if _, err := ParseStep(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestCaseJSONRoundTrips: a case saved in a repro file reads back the
// same through the kind's strict decoder.
func TestCaseJSONRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	cases := []*Case{baseCase()}
	for _, p := range Profiles {
		cases = append(cases, (&Gen{Geometry: pd.DefaultGeometry(1, DefaultPages), Profile: p}).Draw(rng))
	}
	for _, c := range cases {
		if diff := cmp.Diff(c, kindtest.JSONRoundTrip(t, &Kind, c, 0)); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	if _, err := Kind.Decode([]byte(`{"geometry":{},"rooms":[],"steps":["poll"],"extra":1}`), 0); err == nil {
		t.Error("an unknown field decoded")
	}
	if _, err := Kind.Decode([]byte(`{"geometry":{},"rooms":[],"steps":["jump"]}`), 0); err == nil || !strings.Contains(err.Error(), "jump") {
		t.Errorf("a bad step: %v", err)
	}
}

// TestDrawsAndDecodesAreValid: every drawn case and every decoded fuzz
// input is a valid case, and the generator reaches what the mutants need.
func TestDrawsAndDecodesAreValid(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	g := pd.DefaultGeometry(DefaultLayers, DefaultPages)
	var moved, successors, multi, aborts, fails int
	for _, p := range Profiles {
		gen := &Gen{Geometry: g, Profile: p}
		for range 500 {
			c := gen.Draw(rng)
			if err := c.Validate(0); err != nil {
				t.Fatalf("%s draws an invalid case: %v\n%+v", p, err, c)
			}
			moved += min(c.Moved(), 1)
			successors += min(c.Successors(), 1)
			for _, r := range c.Rooms {
				multi += min(len(r.Components)-1, 1)
			}
			for _, s := range c.Steps {
				aborts += b2i(s.Op == OpAbort)
				fails += b2i(s.Op == OpFail)
			}
		}
	}
	if moved == 0 || successors == 0 || multi == 0 || aborts == 0 || fails == 0 {
		t.Errorf("2000 draws: %d compacted tables, %d with successors, %d multi-component rooms, %d aborts, %d fails",
			moved, successors, multi, aborts, fails)
	}
	for range 2000 {
		data := make([]byte, rng.Intn(64))
		rng.Read(data)
		if c := Decode(data, g); c.Validate(0) != nil {
			t.Fatalf("%x decodes to an invalid case: %v", data, c.Validate(0))
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// size is the measure shrinking decreases.
func size(c *Case) int {
	n := len(c.Rooms) + len(c.Steps) + len(c.Geometry.Buffers) + c.Geometry.Pages + c.Moved()
	for i, r := range c.Rooms {
		n += len(r.Src) + len(r.Components) + b2i(r.ID != uint64(i))
		for _, comp := range r.Components {
			n += len(comp.Handles)
		}
	}
	return n
}

// TestShrinkCandidatesAreValidAndSmaller: shrinking never leaves the
// valid cases and always makes progress, so it ends.
func TestShrinkCandidatesAreValidAndSmaller(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	gen := &Gen{Geometry: pd.DefaultGeometry(DefaultLayers, DefaultPages), Profile: ProfileMixed}
	for range 100 {
		c := gen.Draw(rng)
		for _, x := range Shrink(c) {
			if err := x.Validate(0); err != nil {
				t.Fatalf("a shrink of %v is invalid: %v", c, err)
			}
			if size(x) >= size(c) {
				t.Fatalf("a shrink of %v (size %d) is not smaller: %v (size %d)", c, size(c), x, size(x))
			}
		}
	}
	if n := len(Shrink(baseCase())); n < 10 {
		t.Errorf("the base case has %d shrinks", n)
	}
}
