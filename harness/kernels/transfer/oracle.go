package transfer

import (
	"sort"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
)

// Oracle is everything the oracle knows about one transfer case.
// Build it once per case; Check it after every run.
type Oracle struct {
	Buffers []pd.BufferPools // in request order
	Case    *Case

	rooms map[uint64]int // room id → index
	dsts  []map[int64]pageRef
}

// pageRef is one page pair of a room, in physical pages of one buffer.
type pageRef struct {
	room, index int
	src, dst    int64
}

// NewOracle indexes a case's page pairs per buffer.
func NewOracle(bufs []pd.BufferPools, c *Case) *Oracle {
	tc := &Oracle{Buffers: bufs, Case: c, rooms: map[uint64]int{}, dsts: make([]map[int64]pageRef, len(bufs))}
	for i, r := range c.Rooms {
		tc.rooms[r.ID] = i
	}
	for b := range bufs {
		tc.dsts[b] = map[int64]pageRef{}
		for _, ref := range tc.refs(b) {
			tc.dsts[b][ref.dst] = ref
		}
	}
	return tc
}

// refs lists buffer b's page pairs, room by room, in list order.
func (tc *Oracle) refs(b int) []pageRef {
	buf := tc.Buffers[b]
	var out []pageRef
	for ri, r := range tc.Case.Rooms {
		for i := range r.Src {
			out = append(out, pageRef{ri, i, buf.Phys(r.Src[i]), buf.Phys(r.Dst[i])})
		}
	}
	return out
}

// Findings is the verdict on one run.
type Findings struct {
	Violations []Violation
	Digests    []pd.RoomDigest
}

// Check judges one run: the descriptors the plugin answered, and what the
// run changed in each buffer's source and destination region (src[b] and
// dst[b], relative to the pool base, as oracle.Capture returns them).
func (tc *Oracle) Check(ds []pd.Descriptor, src, dst []oracle.Delta) *Findings {
	j := &judge{tc: tc, ds: ds, covered: map[coverKey][]int{}, missing: missingRun{at: -1}}
	j.indexWrites()
	j.checkDescriptors()
	j.checkOverlap()
	j.checkCoverage()
	j.checkBytes(src, dst)
	return &Findings{Violations: finish(j.out), Digests: j.digests}
}

// judge is the state of one Check.
type judge struct {
	tc      *Oracle
	ds      []pd.Descriptor
	covered map[coverKey][]int // page pairs of well-formed descriptors
	writes  []int              // descriptor indices by destination offset
	out     []Violation
	digests []pd.RoomDigest
	missing missingRun // see extendMissing
}

// coverKey is one page pair a descriptor sends.
type coverKey struct {
	room, buffer int
	src, dst     int64
}

func (j *judge) add(v Violation) { j.out = append(j.out, v) }

// indexWrites sorts the descriptors by destination, to find who wrote a
// byte.
func (j *judge) indexWrites() {
	for k, d := range j.ds {
		if d.Length > 0 {
			j.writes = append(j.writes, k)
		}
	}
	sort.SliceStable(j.writes, func(a, b int) bool { return j.ds[j.writes[a]].Dst < j.ds[j.writes[b]].Dst })
}

// writer returns a descriptor whose destination range holds arena offset
// off, or -1.
func (j *judge) writer(off int) int {
	for _, k := range j.writes {
		d := j.ds[k]
		if d.Dst > off {
			break
		}
		if off < d.Dst+d.Length {
			return k
		}
	}
	return -1
}

// maxPerKind bounds the violations kept of one kind: a buffer never sent
// makes one per page, and the first ones say it all.
const maxPerKind = 64

// finish orders violations by kind (Kinds order), room, buffer and
// page, and keeps the first maxPerKind of each kind.
func finish(vs []Violation) []Violation {
	return oracle.KeepPerKind(vs, Kinds, maxPerKind, func(v *Violation, more string) { v.Detail += more })
}

// roomViolation starts a violation about room ri's page i in buffer b.
func (j *judge) roomViolation(k oracle.Kind, ri, b, i int) Violation {
	v := NewViolation(k)
	v.Room, v.RoomID = ri, j.tc.Case.Rooms[ri].ID
	v.Buffer = j.tc.Buffers[b].Name
	if i >= 0 {
		r := j.tc.Case.Rooms[ri]
		buf := j.tc.Buffers[b]
		v.Page, v.SrcPage, v.DstPage = i, buf.Phys(r.Src[i]), buf.Phys(r.Dst[i])
	}
	return v
}

// withDescriptor names descriptor k as the one at fault.
func (j *judge) withDescriptor(v Violation, k int) Violation {
	if k >= 0 {
		d := j.ds[k]
		v.Descriptor, v.Desc = k, &d
	}
	return v
}
