package load

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// The happens-before checker is the second oracle, and it does not depend
// on timing. The SDK logs every stream operation of a call, the plugin's
// and its own (probes, readers, the caller's input writes), with the bytes
// each reads and writes and, for each wait, the operation it is ordered
// after (the record it captured, the counter write that satisfied it).
// Operations of one stream are ordered as queued; a wait adds an edge from
// what it waited for. Two operations on different streams that touch the
// same bytes, one of them a write, with no path between them, race: which
// one a GPU runs first is luck, whatever a run happened to show.

// hbOp is one logged operation with its place in the order.
type hbOp struct {
	a     *kvpb.LoadAccess
	index int   // position on its stream, from 1
	clock []int // vector clock: for each stream, the last op there ordered before or at this one
}

// order is a call's happens-before relation.
type order struct {
	ops     []*hbOp
	streams []string
}

// newOrder builds the relation of a trace.
func newOrder(trace []*kvpb.LoadAccess, streams []string) (*order, error) {
	o := &order{streams: streams, ops: make([]*hbOp, len(trace))}
	count := make([]int, len(streams))
	var prev = make([]int, len(streams)) // last op seq on each stream, +1
	preds := make([][]int, len(trace))
	indeg := make([]int, len(trace))
	succ := make([][]int, len(trace))
	for i, a := range trace {
		if int(a.Seq) != i || int(a.Stream) >= len(streams) || a.After >= int32(len(trace)) {
			return nil, fmt.Errorf("trace op %d: seq %d, stream %d, after %d: out of order or out of range", i, a.Seq, a.Stream, a.After)
		}
		count[a.Stream]++
		o.ops[i] = &hbOp{a: a, index: count[a.Stream]}
		if p := prev[a.Stream]; p > 0 {
			preds[i] = append(preds[i], p-1)
		}
		prev[a.Stream] = i + 1
		if a.After >= 0 {
			preds[i] = append(preds[i], int(a.After))
		}
		for _, p := range preds[i] {
			succ[p] = append(succ[p], i)
		}
		indeg[i] = len(preds[i])
	}
	return o, o.clocks(preds, succ, indeg)
}

// clocks computes every op's vector clock in a topological order (a
// counter wait may be satisfied by a write queued after it).
func (o *order) clocks(preds, succ [][]int, indeg []int) error {
	var ready []int
	for i := range o.ops {
		if indeg[i] == 0 {
			ready = append(ready, i)
		}
	}
	seen := 0
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		seen++
		op := o.ops[i]
		op.clock = make([]int, len(o.streams))
		for _, p := range preds[i] {
			for s, v := range o.ops[p].clock {
				op.clock[s] = max(op.clock[s], v)
			}
		}
		op.clock[op.a.Stream] = op.index
		for _, n := range succ[i] {
			if indeg[n]--; indeg[n] == 0 {
				ready = append(ready, n)
			}
		}
	}
	if seen != len(o.ops) {
		return fmt.Errorf("the trace's waits form a cycle: %d of %d operations are ordered", seen, len(o.ops))
	}
	return nil
}

// before reports whether op a happens before op b.
func (o *order) before(a, b int) bool {
	x, y := o.ops[a], o.ops[b]
	return y.clock[x.a.Stream] >= x.index && a != b
}

// race is two unordered operations touching the same bytes.
type race struct {
	first, second *kvpb.LoadAccess // in the order queued
	hazard        string           // "read after write", "write after read", "write after write"
	// forced: the run's own order of the two was not luck: one ran before
	// the latch opened and the other after, or both before it with a
	// settle point between them (the SDK waited for the first before it
	// queued the second). An unforced race ran in whatever order the
	// backend chose, so the bytes it left are not the case's to judge.
	forced bool
}

// races lists every racing pair of operations, in the order queued.
func (o *order) races() []race {
	var out []race
	for i := range o.ops {
		for j := i + 1; j < len(o.ops); j++ {
			a, b := o.ops[i].a, o.ops[j].a
			if a.Stream == b.Stream {
				continue
			}
			h := hazard(a, b)
			if h == "" || o.before(i, j) || o.before(j, i) {
				continue
			}
			out = append(out, race{first: a, second: b, hazard: h, forced: forced(a, b)})
		}
	}
	return out
}

// forced reports whether the latch or a settle point fixed the order of
// two operations that nothing else orders.
func forced(a, b *kvpb.LoadAccess) bool {
	switch {
	case a.Held != b.Held:
		return true
	case !a.Held:
		return a.Epoch != b.Epoch
	}
	return false
}

// hazard names the conflict between a (queued first) and b, or "".
func hazard(a, b *kvpb.LoadAccess) string {
	switch {
	case touch(a.Writes, b.Reads):
		return "read after write"
	case touch(a.Reads, b.Writes):
		return "write after read"
	case touch(a.Writes, b.Writes):
		return "write after write"
	}
	return ""
}

func touch(xs, ys []*kvpb.LoadRange) bool {
	for _, x := range xs {
		for _, y := range ys {
			if x.Memory == y.Memory && x.Offset < y.Offset+y.Size && y.Offset < x.Offset+x.Size {
				return true
			}
		}
	}
	return false
}

// writerOf is the last plugin operation queued that writes any byte of r
// (the copy that should have landed a page), or -1.
func (o *order) writerOf(r *kvpb.LoadRange) int {
	w := -1
	for i, op := range o.ops {
		if op.a.Role == kvpb.LoadRole_LOAD_ROLE_PLUGIN && touch(op.a.Writes, []*kvpb.LoadRange{r}) {
			w = i
		}
	}
	return w
}

// find is the first op of a role on an item, or -1.
func (o *order) find(role kvpb.LoadRole, it *kvpb.LoadItem) int {
	for i, op := range o.ops {
		if op.a.Role == role && op.a.Item != nil && op.a.Item.Layer == it.Layer && op.a.Item.Buffer == it.Buffer && op.a.Item.Page == it.Page {
			return i
		}
	}
	return -1
}

// name is an op as reports show it: "probe L1/indexk page 0 (consumer #17)".
func (o *order) name(a *kvpb.LoadAccess) string {
	what := a.Label
	if what == "" {
		what = kindName(a.Kind)
	}
	return fmt.Sprintf("%s (%s #%d)", what, o.streams[a.Stream], a.Seq)
}

func kindName(k kvpb.LoadOpKind) string {
	switch k {
	case kvpb.LoadOpKind_LOAD_OP_KIND_COPY:
		return "copy"
	case kvpb.LoadOpKind_LOAD_OP_KIND_LAUNCH:
		return "launch"
	case kvpb.LoadOpKind_LOAD_OP_KIND_RECORD:
		return "record"
	case kvpb.LoadOpKind_LOAD_OP_KIND_WAIT:
		return "wait"
	case kvpb.LoadOpKind_LOAD_OP_KIND_WRITE_VALUE:
		return "counter write"
	case kvpb.LoadOpKind_LOAD_OP_KIND_WAIT_VALUE:
		return "counter wait"
	case kvpb.LoadOpKind_LOAD_OP_KIND_LATCH:
		return "latch"
	}
	return k.String()
}

// edge says which ordering edge is missing between a (queued first) and
// b: an event recorded on a's stream after a, waited on b's stream before
// b.
func (o *order) edge(a, b *kvpb.LoadAccess) string {
	return fmt.Sprintf("%s #%d → %s #%d (record an event on %s after #%d and wait on it on %s before #%d)",
		o.streams[a.Stream], a.Seq, o.streams[b.Stream], b.Seq, o.streams[a.Stream], a.Seq, o.streams[b.Stream], b.Seq)
}
