package read

import (
	"encoding/binary"
	"slices"

	"github.com/kvharness/kvharness/harness/workload"
)

// Limits bound what Decode makes of fuzz bytes.
type Limits struct {
	Slots, PageSize int
	MaxRequests     int // at most 256
	MaxK            int // at most 256
	MaxList         int // tokens per list, at most 255
	MaxTokens       int // all lists together
}

// Case fuzz bytes are a stream of choices, zeros past the end (see the
// store format in decode.go), so every input decodes to a valid read case:
//
//	k          1   1 + value mod MaxK
//	requests   1   1 + value mod MaxRequests
//	per request:   query kind 1 (mod 8: zero, normal, tiny, outlier,
//	               subnormal, signed zero, boundary, non-finite), query
//	               seed 1, list length 1 (mod MaxList+1, cut to the
//	               tokens left), then a slot choice per token
//	per key, in order of first appearance: kind 1 (mod 11: zero, normal,
//	               tiny, outlier, huge, 5: the previous key's vector
//	               again, an exact tie, then subnormal, signed zero,
//	               boundary, max-finite, non-finite), seed 1; a max-finite
//	               key that a request whose query could overflow names
//	               (VecKind.ScoresMaxFinite) is a huge one of its seed
//
// Every class decodes; a target whose plugin declares no non-finite
// policy judges the case with its non-finite vectors made normal ones of
// the same seed (Target.Fit).
//
// A slot choice is one byte selecting a rule — slot 0, the last slot, a
// page edge (2 more bytes: page), the neighbour of the list's previous
// token, a raw slot (4 more bytes), or a slot an earlier request named (1
// more byte: which) — and a slot the list already holds moves to the next
// free one, keeping lists duplicate-free by construction.
const (
	readChoiceShared = workload.NumChoices // after the store's five rules
	numReadChoices   = workload.NumChoices + 1
	keyKindRepeat    = 5
)

// queryKinds and keyKinds are the kinds a kind byte picks among, by index
// (keyKinds[keyKindRepeat] stands for the repeat): the kinds that were
// first keep the values they had, so old corpora read as they did.
var (
	queryKinds = []VecKind{VecZero, VecNormal, VecTiny, VecOutlier, VecSubnormal, VecSignedZero, VecBoundary, VecNonFinite}
	keyKinds   = []VecKind{VecZero, VecNormal, VecTiny, VecOutlier, VecHuge, numVecKinds, VecSubnormal, VecSignedZero, VecBoundary,
		VecMaxFinite, VecNonFinite}
)

// Decode turns fuzz bytes into a valid read case.
func Decode(data []byte, lim Limits) *Case {
	s := workload.NewStream(data)
	c := &Case{K: 1 + int(s.Byte())%lim.MaxK}
	c.Requests = make([]Request, 1+int(s.Byte())%lim.MaxRequests)
	budget := lim.MaxTokens
	var named []int64
	for i := range c.Requests {
		q := Vec{Kind: queryKinds[int(s.Byte())%len(queryKinds)], Seed: uint64(s.Byte())}
		n := min(int(s.Byte())%(lim.MaxList+1), budget, lim.Slots)
		budget -= n
		c.Requests[i] = Request{Query: q, Tokens: decodeList(s, lim, n, named)}
		named = append(named, c.Requests[i].Tokens...)
	}
	c.Keys = decodeKeys(s, named, overflowing(c.Requests))
	return c
}

func decodeList(s *workload.Stream, lim Limits, n int, named []int64) []int64 {
	out := make([]int64, 0, n)
	taken := make(map[int64]bool, n)
	for range n {
		slot := nextFree(readChoice(s, lim, out, named), lim.Slots, taken)
		taken[slot] = true
		out = append(out, slot)
	}
	return out
}

// readChoice applies one slot-choice rule; the result may be out of range.
func readChoice(s *workload.Stream, lim Limits, list, named []int64) int64 {
	rule := s.Byte() % numReadChoices
	if rule != readChoiceShared {
		return s.Slot(rule, lim.Slots, int64(max(lim.PageSize, 1)), 0, list)
	}
	if len(named) == 0 {
		return 0
	}
	return named[int(s.Byte())%len(named)]
}

// nextFree moves a slot into range and, if taken, to the next free one.
func nextFree(slot int64, slots int, taken map[int64]bool) int64 {
	u := int64(slots)
	slot = (slot%u + u) % u
	for taken[slot] {
		slot = (slot + 1) % u
	}
	return slot
}

// overflowing is the slots a request whose query could overflow a
// max-finite key's score names.
func overflowing(requests []Request) map[int64]bool {
	out := map[int64]bool{}
	for _, q := range requests {
		if !q.Query.Kind.ScoresMaxFinite() {
			for _, t := range q.Tokens {
				out[t] = true
			}
		}
	}
	return out
}

func decodeKeys(s *workload.Stream, named []int64, overflow map[int64]bool) []Key {
	var keys []Key
	seen := map[int64]bool{}
	for _, slot := range named {
		if seen[slot] {
			continue
		}
		seen[slot] = true
		kind, seed := int(s.Byte())%len(keyKinds), uint64(s.Byte())
		v := Vec{Kind: keyKinds[kind], Seed: seed}
		if kind == keyKindRepeat {
			v = Vec{Kind: VecNormal, Seed: seed}
			if len(keys) > 0 {
				v = keys[len(keys)-1].Vec
			}
		}
		if v.Kind == VecMaxFinite && overflow[slot] {
			v.Kind = VecHuge
		}
		keys = append(keys, Key{Slot: slot, Vec: v})
	}
	return keys
}

// Encode is Decode's inverse for a case within lim whose keys are
// in order of first appearance and whose seeds are below 256:
// Decode(Encode(c), lim) equals c. Seed corpora are written with it.
func Encode(c *Case, lim Limits) []byte {
	out := []byte{byte((c.K - 1) % lim.MaxK), byte((len(c.Requests) - 1) % lim.MaxRequests)}
	for _, q := range c.Requests {
		out = append(out, byte(slices.Index(queryKinds, q.Query.Kind)), byte(q.Query.Seed), byte(len(q.Tokens)))
		for _, t := range q.Tokens {
			out = append(out, workload.ChoiceRaw)
			out = binary.LittleEndian.AppendUint32(out, uint32(t))
		}
	}
	for _, k := range c.Keys {
		out = append(out, byte(slices.Index(keyKinds, k.Kind)), byte(k.Seed))
	}
	return out
}
