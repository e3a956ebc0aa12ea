package store

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// Slots are staged at the declared width: an int32 kernel reads -1 as
// -1 and each slot in its own four bytes; int64 (and an undeclared
// width) takes eight.
func TestPutSlots(t *testing.T) {
	loc := []int64{0, 5, -1, math.MaxInt32}
	b := putSlots(loc, 32)
	if len(b) != 16 {
		t.Fatalf("32-bit: %d bytes", len(b))
	}
	for i, s := range loc {
		if got := int64(int32(binary.LittleEndian.Uint32(b[4*i:]))); got != s {
			t.Errorf("32-bit slot %d reads %d, want %d", i, got, s)
		}
	}
	for _, bits := range []int{64, 0} {
		b = putSlots(append(loc, 1<<40), bits)
		if len(b) != 40 || int64(binary.LittleEndian.Uint64(b[16:])) != -1 || binary.LittleEndian.Uint64(b[32:]) != 1<<40 {
			t.Errorf("%d bits: % x", bits, b)
		}
	}
}

// A 32-bit kernel cannot index a pool past 2^31 slots: the target says
// so before any case; a 64-bit one can, and the generator draws slots
// past 2^31 there (and only where the pool has them).
func TestSlotsPast31Bits(t *testing.T) {
	if err := checkSlotWidth(32, 1<<31, "p"); err != nil {
		t.Errorf("2^31 slots, 32-bit: %v", err)
	}
	err := checkSlotWidth(32, 1<<31+1, "p")
	if err == nil || !strings.Contains(err.Error(), "plugin p reads 32-bit slots") || !strings.Contains(err.Error(), "--slots") {
		t.Errorf("2^31+1 slots, 32-bit: %v", err)
	}
	if err := checkSlotWidth(64, 1<<40, "p"); err != nil {
		t.Errorf("64-bit: %v", err)
	}
	for _, slots := range []int{1 << 20, 1 << 33} {
		g := &Gen{Slots: slots, PageSize: 64, Padding: PadMinus1, MaxCapacity: 64}
		rng := rand.New(rand.NewSource(1))
		past, minus1 := 0, 0
		for range 500 {
			c := g.Draw(rng)
			if err := c.Validate(slots); err != nil {
				t.Fatal(err)
			}
			for i, s := range c.Loc {
				if s > math.MaxInt32 {
					past++
				}
				if i >= c.Valid && s == -1 {
					minus1++
				}
			}
		}
		if (past > 0) != (slots > math.MaxInt32) || minus1 == 0 {
			t.Errorf("%d slots: %d slots past 2^31-1, %d -1 sentinels", slots, past, minus1)
		}
	}
}

// A plugin declaring 32-bit slots gets loc staged as int32 (the SDK
// refuses any other width, so a passing check is the proof), its recipe
// applied to the layout, and the -1 sentinel under minus1.
func TestInt32SlotsStaged(t *testing.T) {
	tg := openTarget(t, "recipestore", "fp8-rows", "int32-slots")
	if tg.Declared.SlotBits != 32 {
		t.Fatalf("declared %d-bit slots", tg.Declared.SlotBits)
	}
	if q, _ := tg.Layout.Quant("value"); !q.Reciprocal || q.Eps != 1e-8 {
		t.Errorf("judged by %+v, not the declared recipe", q)
	}
	for _, c := range []*Case{storeCase(PadMinus1, 2, 7, 4095, -1), storeCase(PadCount, 1, 64, 64)} {
		res, err := tg.Check(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed() {
			t.Errorf("%v: %v", c, res.Violations)
		}
		s := tg.stagedFor(tg.exact)
		loc := s.want[tg.rowsBytes():]
		if s.slotW != 4 || s.capacity != c.Capacity() {
			t.Errorf("loc staged at %d bytes a slot for %d slots; want 4 for %d", s.slotW, s.capacity, c.Capacity())
		}
		for i, slot := range c.Loc {
			if got := int32(binary.LittleEndian.Uint32(loc[4*i:])); int64(got) != slot {
				t.Errorf("staged slot %d is %d, want %d", i, got, slot)
			}
		}
	}
}
