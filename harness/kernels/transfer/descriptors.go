package transfer

import (
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/pool"
)

// checkDescriptors vets every descriptor and records the page pairs of the
// well-formed ones for the coverage check. A malformed descriptor covers
// nothing: its bytes are judged by the byte checks alone.
func (j *judge) checkDescriptors() {
	for k, d := range j.ds {
		problems, srcPage, dstPage := j.vet(d)
		if len(problems) > 0 {
			j.add(j.descriptorViolation(k, problems))
			continue
		}
		ri, b := j.tc.rooms[d.Room], d.Buffer
		for n := range int64(d.Run) {
			key := coverKey{ri, b, srcPage + n, dstPage + n}
			j.covered[key] = append(j.covered[key], k)
		}
	}
}

// vet lists what is wrong with a descriptor and, when nothing is, returns
// its first source and destination page.
func (j *judge) vet(d pd.Descriptor) (problems []string, srcPage, dstPage int64) {
	if d.Buffer < 0 || d.Buffer >= len(j.tc.Buffers) {
		return []string{fmt.Sprintf("names buffer %d; the request sent %d buffers", d.Buffer, len(j.tc.Buffers))}, 0, 0
	}
	b := j.tc.Buffers[d.Buffer]
	if _, ok := j.tc.rooms[d.Room]; !ok {
		problems = append(problems, fmt.Sprintf("names room id %d, which the request does not have", d.Room))
	}
	vet, srcPage, dstPage := pd.VetCopy(d, b, func(_ string, off int) string { return j.where(off) })
	return append(problems, vet...), srcPage, dstPage
}

func (j *judge) descriptorViolation(k int, problems []string) Violation {
	d := j.ds[k]
	v := j.withDescriptor(NewViolation(BadDescriptor), k)
	if ri, ok := j.tc.rooms[d.Room]; ok {
		v.Room, v.RoomID = ri, d.Room
	}
	if d.Buffer >= 0 && d.Buffer < len(j.tc.Buffers) {
		b := j.tc.Buffers[d.Buffer]
		v.Buffer, v.Off, v.Len = b.Name, d.Dst-b.Dst.Pool.Off, d.Length
	}
	v.Detail = fmt.Sprintf("%s: %s", d, strings.Join(problems, "; "))
	return v
}

// where names the region of an arena offset, e.g. "L0.kv's src page 5
// (+128)", "L0.kv's dst guard before", for messages.
func (j *judge) where(off int) string {
	for _, b := range j.tc.Buffers {
		for _, s := range []struct {
			side string
			r    pool.Region
		}{{"src", b.Src}, {"dst", b.Dst}} {
			if w := pd.RegionPart(b, s.side, s.r, off); w != "" {
				return w
			}
		}
	}
	return "no pool of this transfer"
}
