package layout

import (
	"strings"
	"testing"
)

// This file holds the layout algebra's mutants: caches written by a
// kernel that gets one fact of the layout wrong, read back through the
// right layout slot by slot. The judgement must flag them, naming the
// field; the right writer must pass (no false alarm).

// judgePool judges every slot of a pool with layout l and counts the
// slots with findings and the fields they name.
func judgePool(l *Layout, pool []byte, slots []int64, rows [][]uint16, in Inputs) (flagged int, fields map[string]int, first string) {
	fields = map[string]int{}
	for i, s := range slots {
		fs := l.JudgeWith(rows[i], in, slotPieces(l, pool, s), ByRecipe)
		if len(fs) == 0 {
			continue
		}
		flagged++
		if first == "" {
			first = fs[0].String()
		}
		for _, f := range fs {
			fields[f.Field]++
		}
	}
	return flagged, fields, first
}

// fullPool writes every slot of pages pages through writer (bound to the
// pool), each slot its own row, and returns the pool, slots and rows.
func fullPool(t *testing.T, writer *Layout, pages int, in Inputs) ([]byte, []int64, [][]uint16) {
	t.Helper()
	n := pages * writer.PageSize
	w, err := writer.ForPool(n)
	if err != nil {
		t.Fatal(err)
	}
	slots := make([]int64, n)
	for i := range slots {
		slots[i] = int64(i)
	}
	rows := engineRows(n, writer.RowElems(), uint64(n))
	for i := range rows {
		if i%7 < 2 { // zero and tiny rows hide a misplacement: keep every row live
			rows[i] = engineRows(3, writer.RowElems(), uint64(i))[2]
		}
	}
	return layoutPool(w, slots, rows, in, writer.PoolBytes(n)), slots, rows
}

// mutated is l's description with field name's place replaced.
func mutated(t *testing.T, l *Layout, name string, p *Place) *Layout {
	t.Helper()
	c := l.clone()
	for i := range c.Fields {
		if c.Fields[i].Name == name {
			c.Fields[i].Place = p
		}
	}
	if err := c.compile(); err != nil {
		t.Fatal(err)
	}
	return c
}

type layoutMutant struct {
	name       string
	right      *Layout           // the layout the cache has
	writer     *Layout           // the layout the kernel writes
	in, wrote  Inputs            // the scales passed, the scales the kernel used
	swapKV     bool              // the kernel stores K's row as V and V's as K
	fields     []string          // the fields findings must name
	harmlessIf func(d Dims) bool // geometries where the mistake writes the right bytes
}

func layoutMutants(t *testing.T, d Dims) []layoutMutant {
	b := func(name string) *Layout {
		l, err := BuiltinDims(name, d)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	scales := Inputs{Scales: map[string][]float32{"k": {0.0625 * 3}, "v": {1.7}}}
	inverse := Inputs{Scales: map[string][]float32{"k": {1 / (0.0625 * 3)}, "v": {1 / 1.7}}}
	paged := b("vllm-paged-fp8")
	nv, nvHND := b("nvfp4-kv"), b("nvfp4-kv-hnd")
	s := d.HeadDim / 16
	data := d.PageSize * d.Heads * d.HeadDim / 2
	return []layoutMutant{
		{name: "NHD written to an HND cache", right: b("flashinfer-hnd"), writer: b("flashinfer-nhd"), fields: []string{"k", "v"},
			harmlessIf: func(d Dims) bool { return d.Heads == 1 }},
		{name: "HND written to an NHD cache", right: b("flashinfer-nhd"), writer: b("flashinfer-hnd"), fields: []string{"k", "v"},
			harmlessIf: func(d Dims) bool { return d.Heads == 1 }},
		{name: "fp8 K split with bf16's x (8)", right: paged, in: scales, wrote: scales, fields: []string{"k"},
			writer: mutated(t, paged, "k", torchPlace("k", 0, 1, dim{CoordHead, d.Heads}, dim{CoordUnit, d.HeadDim / 8}, dim{CoordSlot, d.PageSize}, dim{CoordUnit, 8}))},
		{name: "K and V swapped", right: b("vllm-flash"), writer: b("vllm-flash"), swapKV: true, fields: []string{"k", "v"}},
		{name: "K and V swapped in FlashInfer's page", right: b("flashinfer-nhd"), writer: b("flashinfer-nhd"), swapKV: true, fields: []string{"k", "v"}},
		{name: "static scale multiplied, not divided", right: b("vllm-flash-fp8"), writer: b("vllm-flash-fp8"), in: scales, wrote: inverse, fields: []string{"k", "v"}},
		{name: "e5m2 written where e4m3 is declared", right: b("vllm-flash-fp8"), writer: b("vllm-flash-e5m2"), in: scales, wrote: scales, fields: []string{"k", "v"}},
		{name: "NVFP4 block scales at the unswizzled index", right: nv, in: scales, wrote: scales, fields: []string{"k_scale"},
			writer: mutated(t, nv, "k_scale", torchPlace("kv", data, 1, nhd(d, s)...))},
		{name: "NVFP4 HND cache written as NHD (vLLM #49012)", right: nvHND, writer: nv, in: scales, wrote: scales, fields: []string{"k", "k_scale"},
			harmlessIf: func(d Dims) bool { return d.Heads == 1 }},
	}
}

// TestLayoutMutantsCaught: every mutant is flagged on some slot, naming
// its field, for head counts 1 to 8 (where a mistake is harmless at one
// head, it must pass there: the judgement does not flag right bytes);
// the right writer passes everywhere.
func TestLayoutMutantsCaught(t *testing.T) {
	for _, d := range []Dims{{Heads: 1, HeadDim: 64, PageSize: 4}, {Heads: 2, HeadDim: 128, PageSize: 8}, {Heads: 3, HeadDim: 64, PageSize: 16}, {Heads: 8, HeadDim: 64, PageSize: 4}} {
		for _, m := range layoutMutants(t, d) {
			pool, slots, rows := fullPool(t, m.right, 2, m.in)
			right, _ := m.right.ForPool(len(slots))
			if n, _, first := judgePool(right, pool, slots, rows, m.in); n > 0 {
				t.Fatalf("%+v %s: the right writer is flagged: %s", d, m.name, first)
			}
			wrows := rows
			if m.swapKV {
				wrows = make([][]uint16, len(rows))
				half := len(rows[0]) / 2
				for i, r := range rows {
					wrows[i] = append(append([]uint16(nil), r[half:]...), r[:half]...)
				}
			}
			w, _ := m.writer.ForPool(len(slots))
			bad := layoutPool(w, slots, wrows, m.wrote, m.right.PoolBytes(len(slots)))
			n, fields, first := judgePool(right, bad, slots, rows, m.in)
			if m.harmlessIf != nil && m.harmlessIf(d) {
				if n > 0 {
					t.Errorf("%+v %s: harmless here, yet flagged: %s", d, m.name, first)
				}
				continue
			}
			if n == 0 {
				t.Errorf("%+v %s: not caught", d, m.name)
				continue
			}
			for _, f := range m.fields {
				if fields[f] == 0 {
					t.Errorf("%+v %s: no finding names %s (%v): %s", d, m.name, f, fields, first)
				}
			}
			if !strings.Contains(first, " rule, ") {
				t.Errorf("%s: finding %q", m.name, first)
			}
		}
	}
}

// TestReservedSlot: SGLang's pools keep slot 0 as the sink padded tokens
// write; the layouts say so.
func TestReservedSlot(t *testing.T) {
	for name, want := range map[string]int{"sglang-mha": 1, "mxfp8-kv": 1, "vllm-flash": 0, "flashinfer-nhd": 0} {
		l, err := BuiltinDims(name, Dims{PageSize: 32})
		if err != nil {
			t.Fatal(err)
		}
		if l.ReservedSlots != want {
			t.Errorf("%s: %d reserved slots, want %d", name, l.ReservedSlots, want)
		}
	}
}
