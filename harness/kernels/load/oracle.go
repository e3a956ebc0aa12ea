package load

import (
	"bytes"
	"fmt"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// judge is the oracle of one case: it knows every byte a correct run
// shows (a page's source, from its host pool's or the truth slot's
// background; the poison, from its device pool's) and compares what the
// probes and readers saw and what the pools hold afterwards; then it
// reads the gates' answers and the log.
func (t *Target) judge(c *Case, s slots, resp *kvpb.LoadResponse, ch changes) (*Result, error) {
	j := &judgement{t: t, c: c, s: s, ch: ch, res: &Result{Ops: len(resp.Trace)}}
	for _, a := range resp.Trace {
		if a.Held {
			j.res.Held++
		}
	}
	if len(resp.Trace) > 0 {
		o, err := newOrder(resp.Trace, resp.Streams)
		if err != nil {
			return nil, t.protocolFault(err.Error())
		}
		j.order, j.racing = o, o.races()
		for _, r := range j.racing {
			j.luck = j.luck || !r.forced
		}
	}
	steps := []func(*kvpb.LoadResponse) error{j.gates, j.probes, j.readers, j.pools, j.outside}
	for _, step := range steps {
		if err := step(resp); err != nil {
			return nil, err
		}
	}
	if resp.Deadlock != "" {
		j.res.Add(Violation{Kind: Deadlock, Detail: resp.Deadlock})
	}
	j.races()
	return j.res, nil
}

// judgement is one case's oracle at work.
type judgement struct {
	t     *Target
	c     *Case
	s     slots
	order *order
	// racing are the log's races; luck says some of them ran in an order
	// nothing forced, so that only bytes the latch fixed are judged (the
	// happens-before checker reports the races themselves).
	racing []race
	luck   bool
	ch     changes
	res    *Result
	gate   map[[2]int]string // layer, case buffer → the gate's error ("" passed)
	pages  map[[3]int]page   // computed once per case
}

func (t *Target) protocolFault(detail string) error {
	return &plugin.Fault{Kind: plugin.Protocol, Plugin: t.Plugin.Name, Call: "Load", Detail: detail}
}

// gates reads the gates' answers: a layer whose copy failed must not pass;
// a gate may fail only when some copy of the load failed.
func (j *judgement) gates(resp *kvpb.LoadResponse) error {
	c := j.c
	if want := c.Layers * len(c.Order); len(resp.Gates) != want {
		return j.t.protocolFault(fmt.Sprintf("answered %d gates for %d layers × %d buffers", len(resp.Gates), c.Layers, len(c.Order)))
	}
	j.gate = map[[2]int]string{}
	failed := map[[2]int]bool{}
	for _, f := range c.Fail {
		failed[[2]int{f.Layer, c.buffer(f.Buffer)}] = true
	}
	spurious := 0
	for _, g := range resp.Gates {
		if int(g.Layer) >= c.Layers || int(g.Buffer) >= len(c.Buffers) {
			return j.t.protocolFault(fmt.Sprintf("a gate for layer %d buffer %d outside the case", g.Layer, g.Buffer))
		}
		key := [2]int{int(g.Layer), int(g.Buffer)}
		j.gate[key] = g.Error
		j.res.Gates = append(j.res.Gates, GateAnswer{Layer: key[0], Buffer: c.Buffers[key[1]], Error: g.Error})
		switch {
		case g.Error == "" && failed[key]:
			it := Item{Layer: key[0], Buffer: c.Buffers[key[1]]}
			j.res.Add(Violation{Kind: FailedDone, Item: &it,
				Detail: fmt.Sprintf("the gate of layer %d %s let the consumer read, but a copy of that layer's %s failed", key[0], it.Buffer, it.Buffer)})
		case g.Error != "" && len(c.Fail) == 0:
			if spurious++; spurious == 1 {
				j.res.Add(Violation{Kind: Spurious, Detail: fmt.Sprintf("the gate of layer %d %s failed (%s) though no copy failed", key[0], c.Buffers[key[1]], g.Error)})
			}
		}
	}
	return nil
}

// page is everything the oracle knows of one page of the case.
type page struct {
	want, poison, input []byte // input: a store's input before the caller wrote it
	dst                 pool.Window
}

// page is the bytes of layer l's case buffer cb, page i.
func (j *judgement) page(l, cb, i int) page {
	key := [3]int{l, cb, i}
	if p, ok := j.pages[key]; ok {
		return p
	}
	if j.pages == nil {
		j.pages = map[[3]int]page{}
	}
	p := j.computePage(l, cb, i)
	j.pages[key] = p
	return p
}

func (j *judgement) computePage(l, cb, i int) page {
	t, c := j.t, j.c
	gb := c.geometryBuffer(cb)
	pb := t.pageBytes(gb)
	p := c.Pages[i]
	dev := t.devicePool(l, gb)
	dr := t.Pools.Regions[dev]
	out := page{poison: dr.Background(t.poolSeed(dev), p.Dst*pb, pb), dst: pool.Window{Off: dr.Pool.Off + p.Dst*pb, Len: pb}}
	if c.Op == OpLoad {
		host := t.hostPool(l, gb)
		out.want = t.Pools.Regions[host].Background(t.poolSeed(host), p.Src*pb, pb)
		return out
	}
	k := (l*len(c.Buffers)+cb)*len(c.Pages) + i
	out.want = t.stagingBytes(j.s.truths[k], pb)
	out.input = t.stagingBytes(j.s.inputs[k], pb)
	return out
}

// stagingBytes is staging's background at an offset.
func (t *Target) stagingBytes(off, n int) []byte {
	return pool.Background(t.stagingSeed(), off-t.Pools.Staging.Off, n)
}

// staged is what the case left in n bytes of staging at off: the
// background, overlaid with what changed (no second trip to the arena).
func (j *judgement) staged(off, n int) []byte {
	return overlay(j.t.stagingBytes(off, n), pool.Window{Off: off, Len: n}, j.ch.dev)
}

// probes judges every probe a gate let through: it must have seen the
// page's source bytes.
func (j *judgement) probes(*kvpb.LoadResponse) error {
	c := j.c
	j.eachSlot(j.s.probes, c.Order, len(c.Pages), func(l, k, i int, slot []byte) {
		name := c.Order[k]
		cb := c.buffer(name)
		if j.gate[[2]int{l, cb}] != "" {
			return
		}
		p := j.page(l, cb, i)
		got := slot[:len(p.want)]
		it := Item{Layer: l, Buffer: name, Page: i}
		if !bytes.Equal(got, p.want) && (!j.luck || j.latchedPoison(it, p, got)) {
			j.readEarly(it, p, got)
		}
	})
	return nil
}

// latchedPoison reports whether a probe's wrong bytes are the latch's
// doing, whatever the timing: the probe ran before the release, the copy
// of its page after it (or never), and it saw the page's poison.
func (j *judgement) latchedPoison(it Item, p page, got []byte) bool {
	o := j.order
	probe := o.find(kvpb.LoadRole_LOAD_ROLE_PROBE, j.loadItem(it))
	w := o.writerOf(&kvpb.LoadRange{Memory: regionDevice, Offset: uint64(p.dst.Off), Size: uint64(p.dst.Len)})
	return probe >= 0 && !o.ops[probe].a.Held && (w < 0 || o.ops[w].a.Held) && bytes.Equal(got, p.poison)
}

// latchedOverwrite reports whether a reader's wrong bytes are the latch's
// doing: the copy that overwrote the page ran before the release, the
// reader after it, and the reader saw the new bytes.
func (j *judgement) latchedOverwrite(it Item, p page, got []byte) bool {
	o := j.order
	reader := o.find(kvpb.LoadRole_LOAD_ROLE_READER, j.loadItem(it))
	w := o.writerOf(&kvpb.LoadRange{Memory: regionDevice, Offset: uint64(p.dst.Off), Size: uint64(p.dst.Len)})
	return reader >= 0 && w >= 0 && o.ops[reader].a.Held && !o.ops[w].a.Held && bytes.Equal(got, p.want)
}

// loadItem is an item as the protocol names it.
func (j *judgement) loadItem(it Item) *kvpb.LoadItem {
	return &kvpb.LoadItem{Layer: uint32(it.Layer), Buffer: uint32(j.c.buffer(it.Buffer)), Page: uint32(it.Page)}
}

// eachSlot reads back the packed section of staging at offs the probes
// or the readers copied their pages into, once: a slot per layer, per
// buffer of names and per one of n items, in that order, the last slots
// of the last buffer named. It calls f with each slot's layer, buffer
// (its index in names), item and bytes from the slot's start on; nothing
// when offs is empty.
func (j *judgement) eachSlot(offs []int, names []string, n int, f func(l, k, i int, slot []byte)) {
	if len(offs) == 0 {
		return
	}
	last := names[len(names)-1]
	end := offs[len(offs)-1] + j.t.pageBytes(j.c.Geometry.Index(last))
	all := j.staged(offs[0], end-offs[0])
	for l := range j.c.Layers {
		for k := range names {
			for i := range n {
				f(l, k, i, all[offs[(l*len(names)+k)*n+i]-offs[0]:])
			}
		}
	}
}

// readEarly reports a probe that saw other bytes than the load's, saying
// what it saw and which edge was missing.
func (j *judgement) readEarly(it Item, p page, got []byte) {
	v := Violation{Kind: ReadEarly, Item: &it}
	v.Off, v.Len, v.Want, v.Got = firstDiff(p.want, got)
	saw := describe(got, p)
	what := "load"
	if j.c.Op == OpStore {
		what = "store"
	}
	v.Detail = fmt.Sprintf("the consumer's read of device page %d saw %s, not the %s's bytes", j.c.Pages[it.Page].Dst, saw, what)
	j.explain(&v, it, kvpb.LoadRole_LOAD_ROLE_PROBE, p.dst)
	j.res.Add(v)
}

// explain names the missing edge between the copy that writes a page and
// an SDK operation on the item (a probe, a reader), from the log.
func (j *judgement) explain(v *Violation, it Item, role kvpb.LoadRole, dst pool.Window) {
	o := j.order
	if o == nil {
		return
	}
	sdk := o.find(role, j.loadItem(it))
	w := o.writerOf(&kvpb.LoadRange{Memory: regionDevice, Offset: uint64(dst.Off), Size: uint64(dst.Len)})
	switch {
	case sdk < 0:
	case w < 0:
		v.Detail += "; no operation of the plugin wrote that page"
	case role == kvpb.LoadRole_LOAD_ROLE_PROBE && !o.before(w, sdk):
		v.Edge = o.edge(o.ops[w].a, o.ops[sdk].a)
		v.Detail += fmt.Sprintf("; nothing orders %s before %s", o.name(o.ops[w].a), o.name(o.ops[sdk].a))
	case role == kvpb.LoadRole_LOAD_ROLE_READER && !o.before(sdk, w):
		v.Edge = o.edge(o.ops[sdk].a, o.ops[w].a)
		v.Detail += fmt.Sprintf("; nothing orders %s before %s", o.name(o.ops[sdk].a), o.name(o.ops[w].a))
	}
}

// describe says what a wrong page holds.
func describe(got []byte, p page) string {
	switch {
	case bytes.Equal(got, p.poison):
		return "poison (the page as it was before its copy)"
	case p.input != nil && bytes.Equal(got, p.input):
		return "the input page as it was before the caller wrote it (the store copied it early)"
	}
	loaded, poisoned := 0, 0
	for i := range got {
		if got[i] == p.want[i] {
			loaded++
		} else if got[i] == p.poison[i] {
			poisoned++
		}
	}
	if loaded+poisoned == len(got) {
		return fmt.Sprintf("a torn page (%d of %d bytes loaded, the rest poison)", loaded, len(got))
	}
	return fmt.Sprintf("other bytes (%d of %d right)", loaded, len(got))
}

// firstDiff locates the first differing run of want and got.
func firstDiff(want, got []byte) (off, n int, w, g []byte) {
	for off < len(want) && want[off] == got[off] {
		off++
	}
	end := off
	for end < len(want) && want[end] != got[end] {
		end++
	}
	return off, end - off, oracle.Clip(want[off:]), oracle.Clip(got[off:])
}

// readers judges every reader: it must have seen the page as it was
// before the operation overwrote it.
func (j *judgement) readers(*kvpb.LoadResponse) error {
	c := j.c
	j.eachSlot(j.s.readers, c.Buffers, len(c.Readers), func(l, cb, r int, slot []byte) {
		i := c.Readers[r]
		p := j.page(l, cb, i)
		got := slot[:len(p.poison)]
		it := Item{Layer: l, Buffer: c.Buffers[cb], Page: i}
		if bytes.Equal(got, p.poison) || (j.luck && !j.latchedOverwrite(it, p, got)) {
			return
		}
		v := Violation{Kind: Overwrite, Item: &it}
		v.Off, v.Len, v.Want, v.Got = firstDiff(p.poison, got)
		saw := "other bytes"
		if bytes.Equal(got, p.want) {
			saw = "the new bytes"
		}
		v.Detail = fmt.Sprintf("a reader on another stream still held device page %d, and read %s: the %s overwrote it first (write after read)",
			c.Pages[i].Dst, saw, c.Op)
		j.explain(&v, it, kvpb.LoadRole_LOAD_ROLE_READER, p.dst)
		j.res.Add(v)
	})
	return nil
}

// pools judges the device pools once everything ran: each page holds its
// source, a failed copy's page its poison, and nothing else changed.
func (j *judgement) pools(*kvpb.LoadResponse) error {
	t, c := j.t, j.c
	if j.luck {
		return nil // what a racing copy left is the backend's choice
	}
	changes := clip(j.ch.dev, pool.Window{Off: 0, Len: t.Pools.Staging.Off})
	failed := map[Item]bool{}
	for _, f := range c.Fail {
		failed[f] = true
	}
	var pages []pool.Window
	for l := range c.Layers {
		for cb, name := range c.Buffers {
			for i := range c.Pages {
				p := j.page(l, cb, i)
				pages = append(pages, p.dst)
				want := p.want
				if failed[Item{l, name, i}] {
					want = p.poison
				}
				have := final(p, changes)
				if !bytes.Equal(have, want) {
					it := Item{Layer: l, Buffer: name, Page: i}
					v := Violation{Kind: Content, Item: &it, Detail: fmt.Sprintf("when everything had run, device page %d holds %s", c.Pages[i].Dst, describe(have, p))}
					v.Off, v.Len, v.Want, v.Got = firstDiff(want, have)
					j.res.Add(v)
				}
			}
		}
	}
	for _, w := range changes {
		if !inside(w.Window, pages) {
			off := w.Off
			for inside(pool.Window{Off: off, Len: 1}, pages) {
				off++
			}
			j.res.Add(Violation{Kind: Content, Detail: fmt.Sprintf("a byte outside the case's pages changed: %s", t.where(off))})
			break
		}
	}
	return nil
}

// change is a changed window of region 0 and its new bytes.
type change struct {
	pool.Window
	b []byte
}

// deltaWindows splits a delta into its windows, at region offsets.
func deltaWindows(d oracle.Delta, base int) []change {
	out := make([]change, len(d.Windows))
	i := 0
	for k, w := range d.Windows {
		out[k] = change{Window: pool.Window{Off: base + w.Off, Len: w.Len}, b: d.Bytes[i : i+w.Len]}
		i += w.Len
	}
	return out
}

// clip keeps the parts of changes inside w.
func clip(cs []change, w pool.Window) []change {
	var out []change
	for _, c := range cs {
		lo, hi := max(c.Off, w.Off), min(c.End(), w.End())
		if lo < hi {
			out = append(out, change{Window: pool.Window{Off: lo, Len: hi - lo}, b: c.b[lo-c.Off : hi-c.Off]})
		}
	}
	return out
}

// final is a page's bytes once everything ran: its poison, overlaid with
// what changed.
func final(p page, changes []change) []byte {
	return overlay(append([]byte(nil), p.poison...), p.dst, changes)
}

// overlay writes over base (the bytes of window w before the case) what
// changed inside w, and returns it.
func overlay(base []byte, w pool.Window, changes []change) []byte {
	for _, c := range changes {
		lo, hi := max(c.Off, w.Off), min(c.End(), w.End())
		if lo < hi {
			copy(base[lo-w.Off:hi-w.Off], c.b[lo-c.Off:hi-c.Off])
		}
	}
	return base
}

// where names a region-0 offset: a pool's page or guard.
func (t *Target) where(off int) string {
	for _, r := range t.Pools.Regions {
		if r.Mem != regionDevice || !r.Span().Contains(off) {
			continue
		}
		switch {
		case r.GuardBefore.Contains(off):
			return fmt.Sprintf("pool %s's leading guard", r.Name)
		case r.GuardAfter.Contains(off):
			return fmt.Sprintf("pool %s's trailing guard", r.Name)
		}
		return fmt.Sprintf("pool %s page %d", r.Name, (off-r.Pool.Off)/r.Layout.PageBytes())
	}
	return fmt.Sprintf("offset %d", off)
}

// outside checks the host pools and staging: a load only reads the host
// pools; staging changes only in the SDK's probe, reader and input slots.
func (j *judgement) outside(*kvpb.LoadResponse) error {
	t := j.t
	if ws := j.ch.host; len(ws) > 0 {
		j.res.Add(Violation{Kind: Content, Detail: fmt.Sprintf("%d byte range%s of the host pools changed (at %d): a load reads the host pool, never writes it",
			len(ws), plural(len(ws)), ws[0].Off)})
	}
	var staged []pool.Window
	for _, w := range clip(j.ch.dev, t.Pools.Staging) {
		staged = append(staged, w.Window)
	}
	allowed := append(append(j.windows(j.s.probes, j.c.Order, len(j.c.Pages)), j.windows(j.s.readers, j.c.Buffers, len(j.c.Readers))...),
		j.windows(j.s.inputs, j.c.Buffers, len(j.c.Pages))...)
	for _, w := range staged {
		if !inside(w, allowed) {
			j.res.Add(Violation{Kind: Content, Detail: fmt.Sprintf("staging bytes [%d,%d) changed outside the probes', readers' and inputs' slots", w.Off, w.End())})
			break
		}
	}
	return nil
}

// windows are a packed section's slots.
func (j *judgement) windows(offs []int, names []string, per int) []pool.Window {
	var out []pool.Window
	if per == 0 {
		return nil
	}
	for n, off := range offs {
		name := names[(n/per)%len(names)]
		out = append(out, pool.Window{Off: off, Len: j.t.pageBytes(j.c.Geometry.Index(name))})
	}
	return out
}

func inside(w pool.Window, ws []pool.Window) bool {
	for off := w.Off; off < w.End(); {
		i := -1
		for k, x := range ws {
			if x.Contains(off) {
				i = k
				break
			}
		}
		if i < 0 {
			return false
		}
		off = ws[i].End()
	}
	return true
}

// races reports what the happens-before checker finds in the log.
func (j *judgement) races() {
	for _, r := range j.racing {
		v := Violation{Kind: Race, Edge: j.order.edge(r.first, r.second),
			Detail: fmt.Sprintf("%s: %s and %s touch the same bytes and nothing orders them", r.hazard, j.order.name(r.first), j.order.name(r.second))}
		if it := itemOf(j.c, r.first, r.second); it != nil {
			v.Item = it
		}
		j.res.Add(v)
	}
}

// itemOf is the case item of a race, from whichever op names one.
func itemOf(c *Case, ops ...*kvpb.LoadAccess) *Item {
	for _, a := range ops {
		if a.Item != nil && int(a.Item.Buffer) < len(c.Buffers) {
			return &Item{Layer: int(a.Item.Layer), Buffer: c.Buffers[a.Item.Buffer], Page: int(a.Item.Page)}
		}
	}
	return nil
}
