package transfer

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kvharness/kvharness/harness/pd"
)

// checkOverlap finds descriptors writing destination bytes another one
// already writes. Two rooms' pages are distinct, so any overlap means a
// page is written twice, with one of the two copies wrong or redundant.
func (j *judge) checkOverlap() {
	end, last := -1, -1 // furthest destination end so far, and whose
	for _, k := range j.writes {
		d := j.ds[k]
		if d.Dst < end {
			v := j.withDescriptor(NewViolation(Overlap), k)
			j.locate(&v, d)
			v.Detail = fmt.Sprintf("%s writes destination bytes [%d,%d) that descriptor #%d also writes (%s)",
				d, d.Dst, min(end, d.Dst+d.Length), last, j.where(d.Dst))
			j.add(v)
		}
		if d.Dst+d.Length > end {
			end, last = d.Dst+d.Length, k
		}
	}
}

// locate fills in the room and buffer a descriptor names, when they exist.
func (j *judge) locate(v *Violation, d pd.Descriptor) {
	if ri, ok := j.tc.rooms[d.Room]; ok {
		v.Room, v.RoomID = ri, d.Room
	}
	if d.Buffer >= 0 && d.Buffer < len(j.tc.Buffers) {
		b := j.tc.Buffers[d.Buffer]
		v.Buffer, v.Off, v.Len = b.Name, d.Dst-b.Dst.Pool.Off, d.Length
	}
}

// checkCoverage requires every page pair of every room and buffer to be
// sent by exactly one well-formed descriptor, and every page pair a
// descriptor sends to be one the room has.
func (j *judge) checkCoverage() {
	expected := map[coverKey]bool{}
	for b := range j.tc.Buffers {
		for _, ref := range j.tc.refs(b) {
			key := coverKey{ref.room, b, ref.src, ref.dst}
			expected[key] = true
			j.checkPair(b, ref, j.covered[key])
		}
	}
	j.checkStrays(expected)
}

// checkPair judges one expected page pair. Consecutive pages of a room
// that are missing for the same reason make one violation.
func (j *judge) checkPair(b int, ref pageRef, by []int) {
	switch {
	case len(by) > 1:
		v := j.withDescriptor(j.roomViolation(Coverage, ref.room, b, ref.index), by[0])
		v.Off, v.Len = j.pageWindow(b, ref.dst)
		v.Detail = fmt.Sprintf("sent %d times, by descriptors %s", len(by), descList(by))
		j.add(v)
	case len(by) == 0:
		why, k := j.whyMissing(b, ref)
		if j.extendMissing(b, ref, why) {
			return
		}
		v := j.withDescriptor(j.roomViolation(Coverage, ref.room, b, ref.index), k)
		v.Off, v.Len = j.pageWindow(b, ref.dst)
		v.Detail = "never sent: " + why
		j.add(v)
		j.missing = missingRun{at: len(j.out) - 1, room: ref.room, buffer: b, next: ref.index + 1, pages: 1, why: why}
	}
}

// missingRun is the last coverage violation for missing pages, which the
// next page of the same room extends when it is missing for the same
// reason.
type missingRun struct {
	at, room, buffer, next, pages int
	why                           string
}

func (j *judge) extendMissing(b int, ref pageRef, why string) bool {
	m := &j.missing
	if m.at != len(j.out)-1 || m.at < 0 || m.room != ref.room || m.buffer != b || m.next != ref.index || m.why != why {
		return false
	}
	m.next++
	m.pages++
	j.out[m.at].Detail = fmt.Sprintf("%d pages from here never sent: %s", m.pages, why)
	return true
}

func (j *judge) pageWindow(b int, dst int64) (int, int) {
	pb := j.tc.Buffers[b].PageBytes
	return int(dst) * pb, pb
}

// whyMissing explains a page pair no descriptor sends, and names the
// descriptor most likely at fault.
func (j *judge) whyMissing(b int, ref pageRef) (string, int) {
	buf := j.tc.Buffers[b]
	if !j.names(func(d pd.Descriptor) bool { return d.Buffer == b }) {
		hint, k := j.sharedHint(b, ref)
		return "no descriptor names buffer " + buf.Name + hint, k
	}
	id := j.tc.Case.Rooms[ref.room].ID
	if !j.names(func(d pd.Descriptor) bool { return d.Buffer == b && d.Room == id }) {
		return fmt.Sprintf("no descriptor of room id %d names buffer %s", id, buf.Name), -1
	}
	if why, k := j.otherTable(b, ref); k >= 0 {
		return why, k
	}
	if k := j.cutShort(b, ref); k >= 0 {
		return fmt.Sprintf("descriptor #%d sends the room's previous page and stops, though both sides continue contiguously: a run cut short", k), k
	}
	return "no descriptor sends this page pair", -1
}

func (j *judge) names(match func(pd.Descriptor) bool) bool {
	for _, d := range j.ds {
		if match(d) {
			return true
		}
	}
	return false
}

// sharedHint says which earlier buffer shares b's allocation (an engine
// that deduplicates registered memory by base address drops one of the
// two) and names the descriptor that sends that buffer's copy of the page:
// the one the two were merged into.
func (j *judge) sharedHint(b int, ref pageRef) (string, int) {
	r := j.tc.Case.Rooms[ref.room]
	for o, ob := range j.tc.Buffers[:b] {
		if ob.Alloc != j.tc.Buffers[b].Alloc {
			continue
		}
		hint := fmt.Sprintf(" (it is carved from allocation %s together with %s: were the two merged by base address?", ob.Alloc, ob.Name)
		if by := j.covered[coverKey{ref.room, o, ob.Phys(r.Src[ref.index]), ob.Phys(r.Dst[ref.index])}]; len(by) > 0 {
			return hint + fmt.Sprintf(" descriptor #%d sends %s's copy of this page)", by[0], ob.Name), by[0]
		}
		return hint + ")", -1
	}
	return "", -1
}

// otherTable finds a descriptor that sends this room page through another
// buffer's page table.
func (j *judge) otherTable(b int, ref pageRef) (string, int) {
	r := j.tc.Case.Rooms[ref.room]
	for _, o := range j.tc.Buffers {
		if o.Shift == j.tc.Buffers[b].Shift {
			continue
		}
		key := coverKey{ref.room, b, o.Phys(r.Src[ref.index]), o.Phys(r.Dst[ref.index])}
		if by := j.covered[key]; len(by) > 0 {
			return fmt.Sprintf("descriptor #%d sends src page %d → dst page %d instead: %s's page table (shift %d), not %s's (shift %d)",
				by[0], key.src, key.dst, o.Name, o.Shift, j.tc.Buffers[b].Name, j.tc.Buffers[b].Shift), by[0]
		}
	}
	return "", -1
}

// cutShort finds a descriptor sending the room's previous page when this
// page continues its run on both sides.
func (j *judge) cutShort(b int, ref pageRef) int {
	if ref.index == 0 || ref.src == 0 || ref.dst == 0 {
		return -1
	}
	prev := j.covered[coverKey{ref.room, b, ref.src - 1, ref.dst - 1}]
	if len(prev) == 0 {
		return -1
	}
	return prev[0]
}

// checkStrays reports page pairs descriptors send that no room has, one
// violation per descriptor.
func (j *judge) checkStrays(expected map[coverKey]bool) {
	strays := map[int][]coverKey{}
	for key, by := range j.covered {
		if !expected[key] {
			for _, k := range by {
				strays[k] = append(strays[k], key)
			}
		}
	}
	ks := make([]int, 0, len(strays))
	for k := range strays {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	for _, k := range ks {
		j.add(j.strayViolation(k, strays[k]))
	}
}

func (j *judge) strayViolation(k int, keys []coverKey) Violation {
	sort.Slice(keys, func(a, b int) bool { return keys[a].src < keys[b].src })
	first := keys[0]
	v := j.withDescriptor(NewViolation(Coverage), k)
	v.Room, v.RoomID = first.room, j.tc.Case.Rooms[first.room].ID
	v.Buffer = j.tc.Buffers[first.buffer].Name
	v.SrcPage, v.DstPage = first.src, first.dst
	v.Off, v.Len = j.pageWindow(first.buffer, first.dst)
	v.Detail = fmt.Sprintf("%s sends %d page pairs the room does not have, the first src page %d → dst page %d%s",
		j.ds[k], len(keys), first.src, first.dst, j.pairHint(first))
	return v
}

// pairHint says what the room does have at a stray's source page.
func (j *judge) pairHint(key coverKey) string {
	b := j.tc.Buffers[key.buffer]
	r := j.tc.Case.Rooms[key.room]
	for i := range r.Src {
		if b.Phys(r.Src[i]) == key.src {
			return fmt.Sprintf(" (the room's page %d goes from src page %d to dst page %d in %s)", i, key.src, b.Phys(r.Dst[i]), b.Name)
		}
	}
	return fmt.Sprintf(" (src page %d of %s is none of the room's pages)", key.src, b.Name)
}

func descList(ks []int) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("#%d", k)
	}
	return strings.Join(parts, ", ")
}
