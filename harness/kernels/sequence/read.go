package sequence

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Reads between steps: a read step calls the plugin's read kernel (the
// read service, read.proto) over each request's page table, in every
// layer, as attention or an indexer reads the cache between a step's
// stores. The query is one-hot: 1.0 on one element, zeros elsewhere, so a
// slot's score is that element of its row exactly, in any order of
// accumulation, and k is the longest list (up to ReadK), so every token
// comes back: the read's answer is a function of the live pages alone,
// and the shadow knows it to the bit. A slot scored otherwise is named: the row of the
// request that held the page before (a stale page, a cache not
// invalidated when the page changed hands), the poison a freed page held
// when it was taken (read before the copy that fills it landed: its
// gate), or neither.

// readKind is the read service a read step calls, when the plugin
// serves it.
var readKind = protocol.Kernel("read")

// ReadTokens bounds one read call: its tokens, and its requests times k.
const ReadTokens = MaxTokens

// ReadK is the most results a read asks a request for: every token of a
// list up to it (each slot judged), the best ReadK of a longer one (a CUDA
// read kernel keeps its candidates in shared memory).
const ReadK = 1024

// readStaging is where a read call's inputs and outputs are staged.
type readStaging struct{ queries, indptr, tokens, slots, scores int }

func (r *readStaging) shift(by int) {
	r.queries += by
	r.indptr += by
	r.tokens += by
	r.slots += by
	r.scores += by
}

// servesRead asks the plugin whether it serves the read kind.
func servesRead(ctx context.Context, p *plugin.Plugin, variant string, g Geometry) (bool, error) {
	d, err := p.Describe(ctx, plugin.Query{Variant: variant, HeadDim: g.HeadDims[0], PageSize: g.PageSize})
	if err != nil {
		return false, err
	}
	return d.Serves(readKind), nil
}

// planReads takes the read staging.
func (t *Target) planReads(take func(int) int) {
	d := maxOf(t.Geometry.HeadDims)
	t.rd = readStaging{queries: take(MaxRead * d * 2), indptr: take((MaxRead + 1) * 8), tokens: take(ReadTokens * 8),
		slots: take(ReadTokens * 8), scores: take(ReadTokens * 4)}
}

// readStep reads the step's requests, as many per call as the staging
// holds, in every layer, and judges each answer.
func (t *Target) readStep(ctx context.Context, sh *shadow, m *model, s Step, step int) ([]Violation, error) {
	var vs []Violation
	for _, side := range []int{resident, remote} {
		batch := slices.DeleteFunc(slices.Clone(s.Batch), func(id int) bool { return m.reqs[id].state != side })
		found, err := t.readSide(ctx, sh, m, batch, side == remote, step)
		if err != nil {
			return nil, err
		}
		vs = append(vs, found...)
	}
	return vs, nil
}

// readSide reads requests of one side: the prefill pools, or the decode
// side's.
func (t *Target) readSide(ctx context.Context, sh *shadow, m *model, batch []int, decode bool, step int) ([]Violation, error) {
	var vs []Violation
	for lo := 0; lo < len(batch); {
		hi, k, n := lo, 0, 0
		for hi < len(batch) {
			l := len(m.reqs[batch[hi]].keys)
			nk := max(k, l)
			if hi > lo && ((hi-lo+1)*nk > ReadTokens || n+l > ReadTokens) {
				break
			}
			k, n, hi = nk, n+l, hi+1
		}
		for l := range t.layouts {
			found, err := t.readCall(ctx, sh, m, batch[lo:hi], min(k, ReadK), l, decode, step)
			if err != nil {
				return nil, err
			}
			vs = append(vs, found...)
		}
		lo = hi
	}
	return vs, nil
}

// element is the query's hot element for a request's read at a step in a
// layer.
func (t *Target) element(step, req, layer int) int {
	return int(mix(t.salt^uint64(step)<<24^uint64(req)<<4^uint64(layer)) % uint64(t.Geometry.HeadDims[layer]))
}

// scored is a slot and its score.
type scored struct {
	slot  int64
	score float32
}

// slots is a request's page table as a token list.
func (m *model) slots(id int) []int64 {
	r := m.reqs[id]
	out := make([]int64, len(r.keys))
	for pos := range r.keys {
		out[pos] = m.g.Slot(r.pages[pos/m.g.PageSize], pos%m.g.PageSize)
	}
	return out
}

// readCall reads reqs in layer l with k results each and judges them.
func (t *Target) readCall(ctx context.Context, sh *shadow, m *model, reqs []int, k, l int, decode bool, step int) ([]Violation, error) {
	pool, base := l, int64(0) // the pool read, and its first slot's number in the shadow
	if decode {
		pool, base = len(t.layouts)+l, int64(t.Geometry.PoolTokens())
	}
	d := t.Geometry.HeadDims[l]
	q := make([]byte, len(reqs)*d*2)
	indptr := make([]byte, (len(reqs)+1)*8)
	var tokens []byte
	lists := make([][]int64, len(reqs))
	for i, id := range reqs {
		binary.LittleEndian.PutUint16(q[(i*d+t.element(step, id, l))*2:], 0x3f80) // 1.0
		lists[i] = m.slots(id)
		for _, s := range lists[i] {
			tokens = binary.LittleEndian.AppendUint64(tokens, uint64(s-base))
		}
		binary.LittleEndian.PutUint64(indptr[(i+1)*8:], uint64(len(tokens)/8))
	}
	for _, w := range []struct {
		b  []byte
		at int
	}{{q, t.rd.queries}, {indptr, t.rd.indptr}, {tokens, t.rd.tokens}} {
		if err := t.Mem().WriteAt(w.b, w.at); err != nil {
			return nil, err
		}
	}
	req := &kvpb.ReadRequest{Pool: uint32(pool), Requests: uint32(len(reqs)), K: uint32(k), QueriesOffset: uint64(t.rd.queries),
		IndptrOffset: uint64(t.rd.indptr), TokensOffset: uint64(t.rd.tokens), OutSlotsOffset: uint64(t.rd.slots), OutScoresOffset: uint64(t.rd.scores)}
	if _, err := plugin.Call(ctx, t.Plugin, "Read", kvpb.NewReadClient(t.Plugin.Conn()).Read, req); err != nil {
		return nil, err
	}
	outSlots, outScores := make([]byte, len(reqs)*k*8), make([]byte, len(reqs)*k*4)
	if err := t.Mem().ReadAt(outSlots, t.rd.slots); err != nil {
		return nil, err
	}
	if err := t.Mem().ReadAt(outScores, t.rd.scores); err != nil {
		return nil, err
	}
	var vs []Violation
	for i, id := range reqs {
		got := make([]scored, k)
		for j := range got {
			at := i*k + j
			got[j] = scored{int64(binary.LittleEndian.Uint64(outSlots[at*8:])), math.Float32frombits(binary.LittleEndian.Uint32(outScores[at*4:]))}
			if got[j].slot >= 0 {
				got[j].slot += base
			}
		}
		if v, ok := t.judgeRead(sh, step, l, id, t.element(step, id, l), lists[i], got); !ok {
			vs = append(vs, v)
		}
	}
	return vs, nil
}

// bf16At is element e of slot off's row in a page's bytes of layer l, as
// a float32 (bf16 widens exactly).
func (t *Target) bf16At(page []byte, l, off, e int) float32 {
	at := off*t.layouts[l].BytesPerToken() + 2*e
	return math.Float32frombits(uint32(binary.LittleEndian.Uint16(page[at:])) << 16)
}

// judgeRead compares a request's read with what its live pages give:
// every slot of its list, best score first, equal scores lower slot
// first; the tail past the list slot -1.
func (t *Target) judgeRead(sh *shadow, step, l, id, e int, list []int64, got []scored) (Violation, bool) {
	P := t.Geometry.PageSize
	want := make([]scored, len(list))
	for i, s := range list {
		want[i] = scored{s, t.bf16At(sh.pages[int(s)/P].want[l], l, int(s)%P, e)}
	}
	slices.SortFunc(want, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return int(a.slot - b.slot)
	})
	byScore := map[int64]float32{}
	for _, g := range got[:min(len(got), len(list))] {
		byScore[g.slot] = g.score
	}
	for _, s := range list {
		w := t.bf16At(sh.pages[int(s)/P].want[l], l, int(s)%P, e)
		if g, ok := byScore[s]; ok && math.Float32bits(g) != math.Float32bits(w) {
			return t.badScore(sh, step, l, id, e, s, w, g), false
		}
	}
	for i, w := range want[:min(len(want), len(got))] {
		if g := got[i]; g.slot != w.slot || math.Float32bits(g.score) != math.Float32bits(w.score) {
			v := t.readViolation(sh, step, l, id, e, w.slot)
			v.Kind = ReadWrong
			what := fmt.Sprintf("slot %d scored %g", g.slot, g.score)
			if !slices.Contains(list, g.slot) {
				what = fmt.Sprintf("slot %d, which is not in r%d's page table", g.slot, id)
			}
			v.Detail = fmt.Sprintf("r%d's read (query on element %d): rank %d returned %s; want slot %d (page %d, %s) scored %g",
				id, e, i, what, w.slot, v.Page, v.owner, w.score)
			return v.Violation, false
		}
	}
	for i := len(want); i < len(got); i++ {
		if got[i].slot != -1 {
			v := t.readViolation(sh, step, l, id, e, list[0])
			v.Kind = ReadWrong
			v.Detail = fmt.Sprintf("r%d's read (query on element %d) of %d tokens: rank %d returned slot %d; want -1 past the list", id, e, len(list), i, got[i].slot)
			return v.Violation, false
		}
	}
	return Violation{}, true
}

// namedViolation is a read finding with its page's owner in words.
type namedViolation struct {
	Violation
	owner string
}

// readViolation fills where a read's finding is: the slot, its page, the
// page's owner and epoch, the element's bytes.
func (t *Target) readViolation(sh *shadow, step, l, id, e int, slot int64) namedViolation {
	P := t.Geometry.PageSize
	pg, off := int(slot)/P, int(slot)%P
	st := &sh.pages[pg]
	v := Violation{Step: step, Layer: l, Page: pg, Slot: slot, Req: id, Owner: st.owner, Since: st.since, Epoch: st.epoch,
		LastWrite: st.last[off], Off: off*t.layouts[l].BytesPerToken() + 2*e, Len: 2}
	v.Want = slices.Clone(st.want[l][v.Off : v.Off+2])
	owner := fmt.Sprintf("r%d's since step %d, epoch %d", st.owner, st.since, st.epoch)
	if st.holders > 1 {
		owner = fmt.Sprintf("shared by %d requests since step %d, epoch %d", st.holders, st.since, st.epoch)
	}
	return namedViolation{v, owner}
}

// badScore explains a slot scored other than its row gives: whose bytes
// the score is.
func (t *Target) badScore(sh *shadow, step, l, id, e int, slot int64, want, got float32) Violation {
	v := t.readViolation(sh, step, l, id, e, slot)
	P := t.Geometry.PageSize
	st := &sh.pages[int(slot)/P]
	off := int(slot) % P
	v.Got = bf16Bytes(got)
	v.Kind = ReadWrong
	whose := "bytes no step of this sequence wrote there"
	row := make([]byte, t.layouts[l].BytesPerToken())
	for i := len(st.pastKeys) - 1; i >= 0 && v.Kind == ReadWrong; i-- {
		fk := st.pastKeys[i][off]
		if fk == (rowKey{}) {
			continue
		}
		rowBytes(row, t.salt, l, fk)
		if math.Float32bits(t.bf16At(row, l, 0, e)) != math.Float32bits(got) {
			continue
		}
		v.Kind, v.Holds = StaleRead, fk.String()
		whose = fk.String() + "'s element"
		if tn, ok := sh.formerOf(v.Page, fk.Req); ok {
			v.Former, v.FormerUntil = tn.req, tn.to
			whose += fmt.Sprintf(" (r%d held this page from step %d until step %d, epoch %d): a stale page", tn.req, tn.from, tn.to, tn.epoch)
		}
	}
	if v.Kind == ReadWrong && st.poisoned && math.Float32bits(t.bf16At(t.poison[l], l, off, e)) == math.Float32bits(got) {
		v.Kind = StaleRead
		whose = fmt.Sprintf("the poison the page held when it was taken at step %d, before the write that fills the slot (step %d) landed: read ahead of its gate", st.since, v.LastWrite)
	}
	v.Detail = fmt.Sprintf("r%d's read (query on element %d): slot %d (page %d, %s, last written legally at step %d) scored %g, want %g: %s",
		id, e, slot, v.Page, v.owner, v.LastWrite, got, want, whose)
	return v.Violation
}

// bf16Bytes is a score's bytes: its bf16 element when it is one, its
// float32 otherwise.
func bf16Bytes(f float32) []byte {
	b := math.Float32bits(f)
	if b&0xffff == 0 {
		return binary.LittleEndian.AppendUint16(nil, uint16(b>>16))
	}
	return binary.LittleEndian.AppendUint32(nil, b)
}
