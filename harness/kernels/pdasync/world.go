package pdasync

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// world is the harness's ground truth while a case runs: which gate it
// set for each handle, what each process said, and who owns each decode
// page in which epoch. The oracle judges every answer against it.
type world struct {
	c       *Case
	bufs    []pd.BufferPools
	handles []*handleInfo // in gate order
	byRef   map[HandleRef]int
	rooms   []*roomInfo
	ids     map[uint64]int // room id → index
	// pages holds the room-level physical decode pages some room or
	// reassignment touched; a page not here is free in epoch 0 (a far
	// pool's millions of pages cost what a case touches).
	pages   map[int64]*pageInfo
	writers map[pageKey][]int
}

// handleInfo is one handle as the harness knows it.
type handleInfo struct {
	ref       HandleRef
	gate      uint32         // what the harness set: gateHeld, gateGo, gateFail
	setAt     string         // when it was set
	posted    bool           // the prefill answered its descriptors
	told      kvpb.AsyncNote // the prefill's handle note, 0 until one came
	tellAt    string
	delivered bool // its note reached the decode
}

// ended reports whether no copy of the handle can land any more: its gate
// was opened or failed, and the prefill said so after.
func (h *handleInfo) ended() bool { return h.gate != gateHeld && h.told != 0 }

// roomInfo is one room as the harness knows it.
type roomInfo struct {
	admitted, posted bool
	over             string // "read" or "freed" once the room is; "" while it lives
	broken           bool   // its admit answer could not be posted
	aborted          string // when it was aborted
	sent             []int64
	phys             []int64
	epochs           []int // the epoch each of its pages entered when it was admitted
	compTold         []kvpb.AsyncNote
	compDelivered    []bool
}

// pageInfo is one physical decode page: its owner (a room index, -1 when
// free) and its epoch, which grows at every admission and every return.
// An epoch's contents: the background (epoch 0), a room's copies (the
// epoch it was admitted in), or the reassignment fill (the epoch it came
// back in).
type pageInfo struct {
	owner   int
	epoch   int
	history []ownership
}

// ownership is one epoch of a page: who held it from when.
type ownership struct {
	epoch int
	room  int // -1: the reassignment fill
	at    string
}

// pageKey is a page of one buffer's decode pool: the buffer's own
// physical page (its page table applied).
type pageKey struct {
	buffer int
	page   int64
}

func newWorld(c *Case, bufs []pd.BufferPools) *world {
	w := &world{c: c, bufs: bufs, byRef: map[HandleRef]int{}, ids: map[uint64]int{}, writers: map[pageKey][]int{},
		pages: map[int64]*pageInfo{}}
	for i, h := range c.Handles() {
		w.byRef[h] = i
		w.handles = append(w.handles, &handleInfo{ref: h})
	}
	for i, r := range c.Rooms {
		w.ids[r.ID] = i
		w.rooms = append(w.rooms, &roomInfo{phys: c.PhysPages(i), compTold: make([]kvpb.AsyncNote, len(r.Components)),
			compDelivered: make([]bool, len(r.Components))})
	}
	return w
}

// page is page p's record, made (free, epoch 0) when first asked for.
func (w *world) page(p int64) *pageInfo {
	pg := w.pages[p]
	if pg == nil {
		pg = &pageInfo{owner: -1}
		w.pages[p] = pg
	}
	return pg
}

// handlesOf lists the handles of room ri's component ci, by gate.
func (w *world) handlesOf(ri, ci int) []int {
	var out []int
	for k := range w.c.Rooms[ri].Components[ci].Handles {
		out = append(out, w.byRef[HandleRef{ri, ci, k}])
	}
	return out
}

// roomHandles lists every handle of room ri, by gate.
func (w *world) roomHandles(ri int) []int {
	var out []int
	for ci := range w.c.Rooms[ri].Components {
		out = append(out, w.handlesOf(ri, ci)...)
	}
	return out
}

// take gives room ri its pages: a new epoch each.
func (w *world) take(ri int, at string) {
	r := w.rooms[ri]
	r.epochs = r.epochs[:0]
	for _, p := range r.phys {
		pg := w.page(p)
		pg.epoch++
		pg.owner = ri
		pg.history = append(pg.history, ownership{pg.epoch, ri, at})
		r.epochs = append(r.epochs, pg.epoch)
	}
}

// give takes room ri's pages back: a new epoch each, the reassignment
// fill's.
func (w *world) give(ri int, at string) {
	for _, p := range w.rooms[ri].phys {
		pg := w.page(p)
		pg.epoch++
		pg.owner = -1
		pg.history = append(pg.history, ownership{pg.epoch, -1, at})
	}
}

// owned reports whether room ri held page p in its current epoch.
func (w *world) owned(ri int, p int64) bool {
	pg := w.page(p)
	return pg.owner == ri
}

// ownedBefore returns the epoch in which room ri held page p, if it did.
func (w *world) ownedBefore(ri int, p int64) (ownership, bool) {
	for _, o := range w.page(p).history {
		if o.room == ri {
			return o, true
		}
	}
	return ownership{}, false
}

// describe says who holds page p now, e.g. "room 2 since step 4
// (epoch 3)", "no room: it came back at step 3 (epoch 2, the
// reassignment fill)".
func (w *world) describe(p int64) string {
	pg := w.page(p)
	if len(pg.history) == 0 {
		return "no room ever (epoch 0, the background)"
	}
	o := pg.history[len(pg.history)-1]
	if o.room < 0 {
		return fmt.Sprintf("no room: it came back at %s and was reassigned (epoch %d)", o.at, o.epoch)
	}
	return fmt.Sprintf("room %d since %s (epoch %d)", o.room, o.at, o.epoch)
}

// logical maps a buffer's physical page back to the room-level page.
func (w *world) logical(b int, q int64) int64 {
	n := int64(w.bufs[b].Pages)
	return ((q-int64(w.bufs[b].Shift))%n + n) % n
}

// fillSeed is the seed of page p's reassignment fill in buffer b's pool
// at an epoch: distinct per buffer, page and epoch, so that a page holding
// an old epoch's fill is told apart from the current one.
func fillSeed(seed int64, b int, p int64, epoch int) uint64 {
	return pool.BackgroundWord(uint64(seed)^0x66696c6c, uint64(b)<<40|uint64(p)<<16|uint64(epoch))
}

// expected fills buf with what buffer b's physical page q holds when its
// room-level page is free in its current epoch: the background, or the
// last reassignment fill.
func (w *world) expected(buf []byte, seed int64, b int, q int64) {
	w.contentAt(buf, seed, b, q, w.page(w.logical(b, q)).epoch)
}

// contentAt fills buf with what buffer b's physical page q holds in a
// free epoch of its page: the background in epoch 0, the reassignment fill
// after. (A room's epoch holds its copies.)
func (w *world) contentAt(buf []byte, seed int64, b int, q int64, epoch int) {
	if epoch == 0 {
		w.dstBackground(buf, b, q)
		return
	}
	pool.FillBackground(buf, fillSeed(seed, b, w.logical(b, q), epoch), 0)
}

// srcPage fills buf with buffer b's source page q.
func (w *world) srcPage(buf []byte, b int, q int64) {
	bp := w.bufs[b]
	pool.FillBackground(buf, bp.SrcSeed, bp.Src.GuardBefore.Len+int(q)*bp.PageBytes)
}

// dstBackground fills buf with buffer b's decode page q's background.
func (w *world) dstBackground(buf []byte, b int, q int64) {
	bp := w.bufs[b]
	pool.FillBackground(buf, bp.DstSeed, bp.Dst.GuardBefore.Len+int(q)*bp.PageBytes)
}
