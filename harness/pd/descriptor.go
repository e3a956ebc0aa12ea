package pd

import (
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/pool"
)

// Descriptor is one contiguous copy a transfer plugin answered, as NIXL and
// Mooncake take them: offsets in the source and destination regions, a
// length, and the page size and page count the plugin believed in.
type Descriptor struct {
	Room    uint64 `json:"room"`
	Buffer  int    `json:"buffer"` // index into the request's buffers
	Src     int    `json:"src_offset"`
	Dst     int    `json:"dst_offset"`
	Length  int    `json:"length"`
	ItemLen int    `json:"item_len"`
	Run     int    `json:"run"`
}

func (d Descriptor) String() string {
	return fmt.Sprintf("{room %d buffer %d src %d dst %d length %d item_len %d run %d}",
		d.Room, d.Buffer, d.Src, d.Dst, d.Length, d.ItemLen, d.Run)
}

// BufferPools is what an oracle knows about one buffer of a transfer:
// its real page size (the item_len every descriptor of it must carry), its
// page table, and where its prefill and decode pools live, with the seed
// each was filled with. The two sides get different seeds, so a page
// copied to the right page number of the wrong side, or never copied, can
// never look right by accident. Src and Dst offsets are in the region each
// pool lives in: one arena for a synchronous transfer, the prefill and the
// decode arena for an asynchronous one.
type BufferPools struct {
	Name      string
	Layout    string
	Alloc     string // allocation key (Buffer.AllocKey)
	PageBytes int
	Pages     int
	Shift     int
	Src, Dst  pool.Region
	SrcSeed   uint64
	DstSeed   uint64
}

// Phys maps a room's page to this buffer's physical page.
func (b BufferPools) Phys(p int64) int64 { return (p + int64(b.Shift)) % int64(b.Pages) }

// PagesLen is the bytes of the pool that hold pages; the aligned window
// may have a tail past them.
func (b BufferPools) PagesLen() int { return b.Pages * b.PageBytes }

// PageOff is the offset of physical page p of a side's pool, in the
// region the pool lives in.
func (b BufferPools) PageOff(side string, p int64) int {
	r := b.Src
	if side == SideDst {
		r = b.Dst
	}
	return r.Pool.Off + int(p)*b.PageBytes
}

// VetCopy lists what is wrong with d as a copy of whole pages of buffer b
// (run, length = item_len × run, item_len = b's page bytes, both ranges
// page-aligned inside b's pools) and, when nothing is, returns its first
// source and destination page. where names the region an offset of a
// side lies in, for messages. Whether d names the right room and buffer is
// the caller's to judge.
func VetCopy(d Descriptor, b BufferPools, where func(side string, off int) string) (problems []string, srcPage, dstPage int64) {
	if d.Run < 1 {
		problems = append(problems, fmt.Sprintf("run %d: want at least one page", d.Run))
	} else if !ProductIs(d.ItemLen, d.Run, d.Length) {
		problems = append(problems, fmt.Sprintf("length %d ≠ item_len %d × run %d", d.Length, d.ItemLen, d.Run))
	}
	if d.ItemLen != b.PageBytes {
		problems = append(problems, fmt.Sprintf("item_len %d, but %s's pages are %d bytes (%s)", d.ItemLen, b.Name, b.PageBytes, b.Layout))
	}
	srcPage, sp := placed(SideSrc, d.Src, d.Length, b, b.Src, where)
	dstPage, dp := placed(SideDst, d.Dst, d.Length, b, b.Dst, where)
	return append(append(problems, sp...), dp...), srcPage, dstPage
}

// placed checks that [off, off+n) is whole pages of buffer b's pool r, and
// returns the first page.
func placed(side string, off, n int, b BufferPools, r pool.Region, where func(string, int) string) (int64, []string) {
	rel := off - r.Pool.Off
	switch {
	case rel < 0 || n < 0 || rel+n > b.PagesLen():
		return 0, []string{fmt.Sprintf("%s [%d,%d) is not inside %s's %s pages (it starts in %s)", side, off, off+n, b.Name, side, where(side, off))}
	case rel%b.PageBytes != 0:
		return 0, []string{fmt.Sprintf("%s starts %d bytes into page %d of %s, not on a page boundary", side, rel%b.PageBytes, rel/b.PageBytes, b.Name)}
	}
	return int64(rel / b.PageBytes), nil
}

// RegionPart names where offset off of a side's region lies relative to
// buffer b's pool r there, e.g. "L0.kv's src page 5 (+128)", "L0.kv's dst
// guard before the pool"; "" when off is not in r at all.
func RegionPart(b BufferPools, side string, r pool.Region, off int) string {
	rel := off - r.Pool.Off
	switch {
	case r.GuardBefore.Contains(off):
		return fmt.Sprintf("%s's %s guard before the pool", b.Name, side)
	case r.GuardAfter.Contains(off), r.Pool.Contains(off) && rel >= b.PagesLen():
		return fmt.Sprintf("%s's %s pool past its last page", b.Name, side)
	case r.Pool.Contains(off):
		return fmt.Sprintf("%s's %s page %d (+%d)", b.Name, side, rel/b.PageBytes, rel%b.PageBytes)
	}
	return ""
}

// ProductIs reports whether a × b = c, without overflowing on the absurd
// values a broken plugin may answer.
func ProductIs(a, b, c int) bool {
	if a < 0 || b < 1 || c < 0 {
		return false
	}
	return c%b == 0 && c/b == a
}

// PageList prints pages with contiguous runs folded, e.g. "[3..5 9 1]",
// at most max entries.
func PageList(pages []int64, max int) string {
	var parts []string
	for i := 0; i < len(pages); {
		j := i
		for j+1 < len(pages) && pages[j+1] == pages[j]+1 {
			j++
		}
		if len(parts) == max {
			parts = append(parts, fmt.Sprintf("…(%d more)", len(pages)-i))
			break
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d..%d", pages[i], pages[j]))
		} else {
			parts = append(parts, fmt.Sprint(pages[i]))
		}
		i = j + 1
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// WhereRoom starts where a pd violation lies: its room by index and id,
// as "room 0 (id 7)"; nothing when the violation is about no room (room
// -1).
func WhereRoom(room int, id uint64) []string {
	if room < 0 {
		return nil
	}
	return []string{fmt.Sprintf("room %d (id %d)", room, id)}
}

// ViolationLine is how the pd kinds print a violation: head (its kind and
// where it lies), the bytes [off, off+n) from the pool base when n is
// positive, then detail.
func ViolationLine(head string, off, n int, detail string) string {
	if n > 0 {
		head += fmt.Sprintf(" bytes [%d,%d) from the pool base", off, off+n)
	}
	return head + ": " + detail
}
