package sequence

import (
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/workload"
)

// Fuzz bytes become a sequence over a base geometry by the rule every
// kind's decoder follows: a stream of choices, zeros past the end, so
// every input is a valid sequence. The format:
//
//	steps     1   1 + value mod 40 steps; then per step:
//	op        1   value mod 8: arrive, decode, finish, abort, evict, load, read, transfer
//	arrive    3   tokens 1 + value mod 3P; from: 0 none, else resident (value-1) mod n;
//	              shared 1 + value mod from's tokens (tokens raised past it)
//	decode    1+n batch size 1 + value mod min(resident, largest capacity); then each
//	              request picked from those not yet in the batch: value mod left
//	finish    1   holding value mod n (abort: holding or evicted; evict, transfer: resident)
//	load      1   evicted value mod n
//	read      1+n as decode, up to MaxRead requests, of those holding pages
//
// A holding request is resident or transferred to the decode side; a
// transfer in a geometry without a decode side is skipped.
//
// Residents and evicted requests are in order of id; requests are
// numbered 1, 2, ... as they arrive. A step the model refuses (no
// resident request, no free page) is skipped, its bytes read.
func Decode(data []byte, base Geometry) *Case {
	s := workload.NewStream(data)
	c := &Case{Geometry: base}
	m := newModel(base)
	next := 1
	n := 1 + int(s.Byte())%40
	for range n {
		st, ok := decodeStep(s, m, &next)
		if !ok {
			continue
		}
		p, err := m.plan(len(c.Steps), st)
		if err != nil {
			continue
		}
		m.apply(p)
		c.Steps = append(c.Steps, st)
	}
	if len(c.Steps) == 0 {
		c.Steps = []Step{{Op: OpArrive, Req: 1, Tokens: 1}}
	}
	return c
}

var opOrder = []Op{OpArrive, OpDecode, OpFinish, OpAbort, OpEvict, OpLoad, OpRead, OpTransfer}

func (m *model) ids(states ...int) []int {
	var out []int
	for id, r := range m.reqs {
		if slices.Contains(states, r.state) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func decodeStep(s *workload.Stream, m *model, next *int) (Step, bool) {
	P := m.g.PageSize
	op := opOrder[int(s.Byte())%len(opOrder)]
	res := m.ids(resident)
	switch op {
	case OpArrive:
		st := Step{Op: OpArrive, Req: *next, Tokens: 1 + int(s.Byte())%(3*P)}
		from, shared := int(s.Byte()), int(s.Byte())
		if from != 0 && len(res) > 0 {
			src := m.reqs[res[(from-1)%len(res)]]
			st.From, st.Shared = src.id, 1+shared%len(src.keys)
			st.Tokens = max(st.Tokens, st.Shared+1)
		}
		*next++
		return st, true
	case OpDecode, OpRead:
		size := int(s.Byte())
		if op == OpRead {
			res = m.ids(resident, remote)
		}
		if len(res) == 0 {
			return Step{}, false
		}
		most := m.g.Capacities[len(m.g.Capacities)-1]
		if op == OpRead {
			most = MaxRead
		}
		size = 1 + size%min(len(res), most)
		left := slices.Clone(res)
		st := Step{Op: op}
		for range size {
			i := int(s.Byte()) % len(left)
			st.Batch = append(st.Batch, left[i])
			left = slices.Delete(left, i, i+1)
		}
		return st, true
	case OpLoad:
		out := m.ids(evicted)
		b := int(s.Byte())
		if len(out) == 0 {
			return Step{}, false
		}
		return Step{Op: OpLoad, Req: out[b%len(out)]}, true
	}
	pool := res
	switch op {
	case OpFinish:
		pool = m.ids(resident, remote)
	case OpAbort:
		pool = m.ids(resident, evicted, remote)
	}
	b := int(s.Byte())
	if len(pool) == 0 {
		return Step{}, false
	}
	return Step{Op: op, Req: pool[b%len(pool)]}, true
}

// Encode is Decode's inverse for a sequence over base whose requests are
// numbered 1, 2, ... in order of arrival: the seed corpus is written
// with it.
func Encode(c *Case, base Geometry) ([]byte, error) {
	if len(c.Steps) > 40 {
		return nil, fmt.Errorf("%d steps: a fuzz input holds at most 40", len(c.Steps))
	}
	out := []byte{byte(len(c.Steps) - 1)}
	m := newModel(base)
	for i, st := range c.Steps {
		res := m.ids(resident)
		out = append(out, byte(slices.Index(opOrder, st.Op)))
		switch st.Op {
		case OpArrive:
			if len(st.More) > 0 {
				return nil, fmt.Errorf("step %d admits %d requests: a fuzz input's arrival admits one", i, 1+len(st.More))
			}
			from, shared := 0, 0
			if st.From != 0 {
				from = slices.Index(res, st.From) + 1
				shared = st.Shared - 1
			}
			out = append(out, byte((st.Tokens-1)%(3*base.PageSize)), byte(from), byte(shared))
		case OpDecode, OpRead:
			out = append(out, byte(len(st.Batch)-1))
			if st.Op == OpRead {
				res = m.ids(resident, remote)
			}
			left := slices.Clone(res)
			for _, r := range st.Batch {
				j := slices.Index(left, r)
				out = append(out, byte(j))
				left = slices.Delete(left, j, j+1)
			}
		case OpLoad:
			out = append(out, byte(slices.Index(m.ids(evicted), st.Req)))
		case OpAbort:
			out = append(out, byte(slices.Index(m.ids(resident, evicted, remote), st.Req)))
		case OpFinish:
			out = append(out, byte(slices.Index(m.ids(resident, remote), st.Req)))
		default:
			out = append(out, byte(slices.Index(res, st.Req)))
		}
		p, err := m.plan(i, st)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		m.apply(p)
	}
	if d := Decode(out, base); d.String() != c.String() {
		return nil, fmt.Errorf("%v encodes to bytes that decode to %v", c, d)
	}
	return out, nil
}
