package sdk

import (
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// maxRotation bounds BenchRequest.rotation: enough sets to step past any
// cache's reuse, few enough that a typo does not stage gigabytes.
const maxRotation = 63

// benchStores is what a store bench launches in turn: the request's store,
// then its rotation.
func benchStores(req *kvpb.BenchRequest) []*kvpb.StoreRequest {
	if req.GetStore() == nil {
		return nil
	}
	return append([]*kvpb.StoreRequest{req.GetStore()}, req.Rotation...)
}

// rotations is how many data sets a bench's launches take in turn: one
// when it does not rotate.
func rotations(req *kvpb.BenchRequest) int { return 1 + len(req.Rotation) }

// checkRotation rejects a rotation that would time something other than
// the store it names: every entry must be the same call on other data,
// maybe in another pool (whose layout Bench checks: sameLayouts).
func checkRotation(req *kvpb.BenchRequest) error {
	st := req.GetStore()
	switch {
	case len(req.Rotation) == 0:
		return nil
	case st == nil:
		return BadRequest("bench: a rotation of %d stores without a store; send the first in store", len(req.Rotation))
	case len(req.Rotation) > maxRotation:
		return BadRequest("bench: rotation of %d stores; at most %d (kvharness bench --rotate %d at the most)", len(req.Rotation), maxRotation, maxRotation+1)
	}
	for i, r := range req.Rotation {
		if r.GetCapacity() != st.Capacity || r.GetValid() != st.Valid || r.GetPadding() != st.Padding || r.GetGraph() != st.Graph {
			return BadRequest("bench: rotation[%d] is not the store's call on other data (capacity %d, valid %d, padding %v, graph %v; the store has %d, %d, %v, %v): only the pool, rows_offset and loc_offset may differ",
				i, r.GetCapacity(), r.GetValid(), r.GetPadding(), r.GetGraph(), st.Capacity, st.Valid, st.Padding, st.Graph)
		}
	}
	return nil
}

// sameLayouts rejects a rotation into a pool of another layout than the
// store's: it would time another kernel. Pools out of range are left to
// checkStore, which names them.
func (s *Server) sameLayouts(req *kvpb.BenchRequest) error {
	st := req.GetStore()
	if st == nil || int(st.Pool) >= len(s.pools) {
		return nil
	}
	want := s.pools[st.Pool].Layout
	for i, r := range req.Rotation {
		if int(r.GetPool()) < len(s.pools) && s.pools[r.GetPool()].Layout != want {
			return BadRequest("bench: rotation[%d] stores into pool %d (%v), the store into pool %d (%v): a rotation's pools share one layout",
				i, r.GetPool(), s.pools[r.GetPool()].Layout, st.Pool, want)
		}
	}
	return nil
}

// turns remembers, per rotation, which data set the next launch takes,
// across Bench calls: the harness splits a cell into many calls, and a
// call that started again at the first set would follow a launch on that
// same set. A copy and a store rotation have cursors of their own.
type turns map[string]int

// maxTurns bounds the rotations remembered: a bench run has a few cells
// at a time, a typo must not grow it without end.
const maxTurns = 64

// inTurn is one launch that runs launches[0], launches[1], ... in turn,
// one per call, going on where the last Bench call of the same rotation
// (key) stopped.
func (t turns) inTurn(key string, launches []func() error) func() error {
	if len(launches) == 1 {
		return launches[0]
	}
	if _, ok := t[key]; !ok && len(t) >= maxTurns {
		clear(t)
	}
	return func() error {
		i := t[key] % len(launches)
		t[key] = (i + 1) % len(launches)
		return launches[i]()
	}
}

// rotation is req's launches taken in turn, going on across calls.
func (s *Server) rotation(req *kvpb.BenchRequest, launches []func() error) func() error {
	if s.turns == nil {
		s.turns = turns{}
	}
	return s.turns.inTurn(rotationKey(req), launches)
}

// rotationKey names what a bench rotates over: the kernel (store or copy)
// and every store's pool and data.
func rotationKey(req *kvpb.BenchRequest) string {
	var b strings.Builder
	b.WriteString(map[bool]string{true: "copy", false: "store"}[req.Copy])
	for _, st := range benchStores(req) {
		fmt.Fprintf(&b, "/%d:%d:%d:%d:%v", st.GetPool(), st.GetCapacity(), st.GetRowsOffset(), st.GetLocOffset(), st.GetGraph())
	}
	return b.String()
}
