package fuzz

import (
	"github.com/kvharness/kvharness/harness/workload"
)

// Seed is a minimal case for one bug class, kept in the seed corpus.
type Seed struct {
	Name   string // file name under testdata/fuzz/FuzzStore
	Layout string
	Case   *workload.Store
	Why    string
}

func rows(kinds ...workload.RowKind) []workload.Row {
	out := make([]workload.Row, len(kinds))
	for i, k := range kinds {
		out[i] = workload.Row{Kind: k, Seed: uint64(i + 1)}
	}
	return out
}

const (
	normal  = workload.RowNormal
	zero    = workload.RowZero
	garbage = workload.RowGarbage
)

// Seeds is the seed corpus: one minimal case per bug class kvharness knows.
// A correct plugin passes all of them; each fails at least one mutant.
var Seeds = []Seed{
	{"count-stale-slot", "bf16", &workload.Store{Padding: workload.PadCount, Valid: 1, Loc: []int64{5, 9}, Rows: rows(normal, garbage)},
		"a padded row holds a stale slot: a pad-unaware store overwrites it"},
	{"count-stale-live-slot", "bf16", &workload.Store{Padding: workload.PadCount, Valid: 1, Loc: []int64{5, 5}, Rows: rows(normal, garbage)},
		"the stale slot now belongs to a live row: the incident"},
	{"sink-slot0", "fp8-rows", &workload.Store{Padding: workload.PadSink, Valid: 1, Loc: []int64{3, 0}, Rows: rows(normal, garbage)},
		"padded rows point at the reserved slot 0 (sglang #33816)"},
	{"minus1-guard", "fp8-paged", &workload.Store{Padding: workload.PadMinus1, Valid: 1, Loc: []int64{3, -1}, Rows: rows(normal, garbage)},
		"padded rows hold -1: a write lands before the pool base, or wraps to the last slot"},
	{"last-slot", "fp8-paged", &workload.Store{Padding: workload.PadNone, Valid: 1, Loc: []int64{Slots - 1}, Rows: rows(normal)},
		"the last slot of the pool: off-by-one tails and page math at the end"},
	{"page-edge", "fp8-paged", &workload.Store{Padding: workload.PadNone, Valid: 2, Loc: []int64{PageSize - 1, PageSize}, Rows: rows(normal, normal)},
		"both sides of a page boundary: scale-plane offsets"},
	{"zero-row", "fp8-rows", &workload.Store{Padding: workload.PadNone, Valid: 1, Loc: []int64{1}, Rows: rows(zero)},
		"an all-zero row: the 1e-4 scale floor"},
	{"tail-row", "bf16", &workload.Store{Padding: workload.PadNone, Valid: 3, Loc: []int64{1, 2, 3}, Rows: rows(normal, normal, normal)},
		"the last valid row: off-by-one loops"},
	{"interleaved-scale", "fp8-paged", &workload.Store{Padding: workload.PadNone, Valid: 2, Loc: []int64{0, 1}, Rows: rows(normal, normal)},
		"neighbouring slots of a packed page: a scale written after its row overwrites the next row"},
	{"padding-only", "bf16", &workload.Store{Padding: workload.PadSink, Valid: 0, Loc: []int64{0}, Rows: rows(garbage)},
		"a batch that is all padding"},
}

// Input encodes a seed as a fuzz input: the layout pick, then the case.
func (s Seed) Input() []byte {
	pick := byte(0)
	for i, n := range layoutOrder {
		if n == s.Layout {
			pick = byte(i)
		}
	}
	return append([]byte{pick}, workload.Encode(s.Case, MaxCapacity)...)
}
