package transfer

import (
	"fmt"
	"strings"

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
func (j *judge) vet(d Descriptor) (problems []string, srcPage, dstPage int64) {
	if d.Buffer < 0 || d.Buffer >= len(j.tc.Buffers) {
		return []string{fmt.Sprintf("names buffer %d; the request sent %d buffers", d.Buffer, len(j.tc.Buffers))}, 0, 0
	}
	b := j.tc.Buffers[d.Buffer]
	if _, ok := j.tc.rooms[d.Room]; !ok {
		problems = append(problems, fmt.Sprintf("names room id %d, which the request does not have", d.Room))
	}
	if d.Run < 1 {
		problems = append(problems, fmt.Sprintf("run %d: want at least one page", d.Run))
	} else if !productIs(d.ItemLen, d.Run, d.Length) {
		problems = append(problems, fmt.Sprintf("length %d ≠ item_len %d × run %d", d.Length, d.ItemLen, d.Run))
	}
	if d.ItemLen != b.PageBytes {
		problems = append(problems, fmt.Sprintf("item_len %d, but %s's pages are %d bytes (%s)", d.ItemLen, b.Name, b.PageBytes, b.Layout))
	}
	srcPage, sp := j.placed("src", d.Src, d.Length, b, b.Src)
	dstPage, dp := j.placed("dst", d.Dst, d.Length, b, b.Dst)
	return append(append(problems, sp...), dp...), srcPage, dstPage
}

// placed checks that [off, off+n) is whole pages of buffer b's pool r, and
// returns the first page.
func (j *judge) placed(side string, off, n int, b BufferPools, r pool.Region) (int64, []string) {
	rel := off - r.Pool.Off
	switch {
	case rel < 0 || n < 0 || rel+n > b.pagesLen():
		return 0, []string{fmt.Sprintf("%s [%d,%d) is not inside %s's %s pages (it starts in %s)", side, off, off+n, b.Name, side, j.where(off))}
	case rel%b.PageBytes != 0:
		return 0, []string{fmt.Sprintf("%s starts %d bytes into page %d of %s, not on a page boundary", side, rel%b.PageBytes, rel/b.PageBytes, b.Name)}
	}
	return int64(rel / b.PageBytes), nil
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
			if w := regionPart(b, s.side, s.r, off); w != "" {
				return w
			}
		}
	}
	return "no pool of this transfer"
}

func regionPart(b BufferPools, side string, r pool.Region, off int) string {
	rel := off - r.Pool.Off
	switch {
	case r.GuardBefore.Contains(off):
		return fmt.Sprintf("%s's %s guard before the pool", b.Name, side)
	case r.GuardAfter.Contains(off), r.Pool.Contains(off) && rel >= b.pagesLen():
		return fmt.Sprintf("%s's %s pool past its last page", b.Name, side)
	case r.Pool.Contains(off):
		return fmt.Sprintf("%s's %s page %d (+%d)", b.Name, side, rel/b.PageBytes, rel%b.PageBytes)
	}
	return ""
}

// productIs reports whether a × b = c, without overflowing on the absurd
// values a broken plugin may answer.
func productIs(a, b, c int) bool {
	if a < 0 || b < 1 || c < 0 {
		return false
	}
	return c%b == 0 && c/b == a
}
