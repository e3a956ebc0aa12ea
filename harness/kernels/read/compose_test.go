package read

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/internal/testtier"
)

// composed runs a writer and a reader, each in a plugin process of its
// own, on one pool: writer layout wl, reader layout rl, at d × p.
func composed(t *testing.T, writer, wVariant, wl, reader, rVariant, rl string, d, p, cases int, seed int64) *Composed {
	t.Helper()
	return composedOn(t, arena.SHM{}, writer, wVariant, wl, reader, rVariant, rl, d, p, cases, seed)
}

// composedOn is composed with the pool on backend b.
func composedOn(t *testing.T, b arena.Backend, writer, wVariant, wl, reader, rVariant, rl string, d, p, cases int, seed int64) *Composed {
	t.Helper()
	wp, dir := plugintest.Start(t, writer)
	rp, _ := plugintest.Start(t, reader)
	c, err := Compose(context.Background(), dir, ComposeConfig{
		Writer: Side{Plugin: wp, Arg: writer, Variant: wVariant, Layout: kindtest.Layout(t, wl, d, p)},
		Reader: Side{Plugin: rp, Arg: reader, Variant: rVariant, Layout: kindtest.Layout(t, rl, d, p)},
		Slots:  1024, Paddings: Paddings, Cases: cases, Seed: seed, Backend: b, Mode: layout.ByRecipe})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func replayLine(pad Padding, seed int64) string { return fmt.Sprintf("replay %s %d", pad, seed) }

func text(c *Composed) string {
	var b bytes.Buffer
	c.WriteText(&b, replayLine)
	return b.String()
}

// TestMatchingPairsPass: correct writers and readers of one layout, the
// kernels written apart (gostore, fusedstore, fp8store, recipestore),
// pass under every padding at drawn head dims and page sizes: no false
// alarm from the writer's arithmetic (its own recipe, 1-ulp scales,
// neighbouring codes at a boundary) or the reader's float32 products.
func TestMatchingPairsPass(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	cases := testtier.Pick(8, 10, 25)
	dims, pages := []int{64, 96, 128, 136, 192, 256}, []int{1, 16, 64}
	for _, tc := range []struct{ writer, reader, layout string }{
		{"gostore", "gostore", "bf16"}, {"gostore", "gostore", "fp8-paged"}, {"gostore", "gostore", "fp8-rows"},
		{"fusedstore", "gostore", "fp8-paged"}, {"gostore", "fusedstore", "fp8-rows"}, {"fp8store", "gostore", "fp8-paged"},
		{"recipestore", "fusedstore", "fp8-paged"}, {"recipestore", "gostore", "fp8-rows"}, {"fusedstore", "fp8store", "fp8-rows"}, {"fusedstore", "fusedstore", "bf16"},
		{"gostore", "gostore:" + "pow2-scale-read", "bf16"},
	} {
		d, p := dims[rng.Intn(len(dims))], pages[rng.Intn(len(pages))]
		reader, variant, _ := strings.Cut(tc.reader, ":")
		t.Run(fmt.Sprintf("%s→%s/%s/D=%d/P=%d", tc.writer, tc.reader, tc.layout, d, p), func(t *testing.T) {
			c := composed(t, tc.writer, "", tc.layout, reader, variant, tc.layout, d, p, cases, rng.Int63())
			if c.Failed() || c.Faulted() {
				t.Fatalf("a matching pair failed:\n%s", text(c))
			}
			for _, r := range c.Rows {
				if r.Passed != cases {
					t.Fatalf("%s: %d cases passed, want %d", r.Padding, r.Passed, cases)
				}
			}
		})
	}
}

// TestPlanarWriterInterleavedReader is the DeepSeek indexer's K cache
// written block-planar (all of a page's codes, then its scales: what
// gostore stores as fp8-paged) and read token-interleaved (each token's
// codes, then its scale: gostore's read of fp8-rows), the same bytes a
// page. Each kernel passes alone; the pair is caught, both kernels
// named, with the value field (tokens past a page's first read from the
// wrong place) and the scale (a page's first token reads its codes right
// and its scale from the next token's codes).
func TestPlanarWriterInterleavedReader(t *testing.T) {
	c := composed(t, "gostore", "", "fp8-paged", "gostore", "", "fp8-rows", 128, 16, 50, 1)
	shrunk := 0
	for _, r := range c.Rows {
		if r.Failure == nil {
			t.Fatalf("%s: the pair passed:\n%s", r.Padding, text(c))
		}
		if r.Failure.Index > 2 {
			t.Errorf("%s: found at case %d; a drawn case has a token past a page's first", r.Padding, r.Failure.Index)
		}
		// A layout disagreement needs no padded row and one key: the
		// shrinker gets there, and the minimal case fails on its own.
		m := r.Failure.Minimal
		if m == nil { // the case found was already minimal
			m = r.Failure.Case
		} else {
			shrunk++
		}
		if len(m.Keys) != 1 || len(m.Pad) != 0 || len(r.Failure.Findings) == 0 {
			t.Errorf("%s: minimal case %v of %v, %d findings; want one key, no padded rows, and its findings", r.Padding, m, r.Failure.Case, len(r.Failure.Findings))
		}
	}
	if shrunk == 0 {
		t.Errorf("no row's failure was shrunk; the padded rows' cases hold padded rows to drop:\n%s", text(c))
	}
	out := text(c)
	if !strings.Contains(out, "minimal case (") {
		t.Errorf("report lacks the minimal case:\n%s", out)
	}
	for _, want := range []string{"writer gostore → reader gostore", "seen: slot", "field value",
		"the writer lays the cache out as fp8-paged, the reader reads it as fp8-rows", "replay none 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !hasFinding(c, FindSeen, "scale") && !strings.Contains(out, "field scale") {
		t.Logf("no scale finding in the first failures (the first tokens of pages were not drawn):\n%s", out)
	}
	if hasFinding(c, FindWritten, "") {
		t.Errorf("the planar writer's bytes are right for its layout:\n%s", out)
	}
}

// TestScaleContract: the writer stores amax/448 (gostore, scale f32),
// the reader believes its scales are powers of two (pow2-scale-read,
// declared ue8m0). The reader passes alone, on the power-of-two scales
// its recipe says; the pair is caught on the scale field, a whole group
// read at one factor in (1/2, 1].
func TestScaleContract(t *testing.T) {
	tg := readTarget(t, "gostore", "fp8-paged", "pow2-scale-read")
	g := &Gen{Slots: tg.Slots, PageSize: 64, MaxRequests: tg.MaxRequests, MaxTokens: tg.MaxTokens, MaxK: tg.MaxK}
	rng := rand.New(rand.NewSource(5))
	for range 40 {
		res, err := tg.Check(context.Background(), g.Draw(rng))
		if err != nil || res.Failed() {
			t.Fatalf("the power-of-two reader alone: %v %v", err, res)
		}
	}
	c := composed(t, "gostore", "", "fp8-paged", "gostore", "pow2-scale-read", "fp8-paged", 128, 64, 50, 1)
	out := text(c)
	for _, r := range c.Rows {
		if r.Failure == nil {
			t.Fatalf("%s: the pair passed:\n%s", r.Padding, out)
		}
	}
	if !hasFinding(c, FindSeen, "scale") || hasFinding(c, FindSeen, "value") {
		t.Errorf("want the scale named, not the codes:\n%s", out)
	}
	for _, want := range []string{"reader gostore (variant pow2-scale-read)", "it reads the group's scale as",
		"the writer's scales follow the f32 rule, the reader takes them as ue8m0"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestWriterWrongAloneIsTheWriters: a writer that fails its own layout
// (gostore's zero-scale) is reported as written, with the check-alone
// hint, not as the reader's misreading.
func TestWriterWrongAloneIsTheWriters(t *testing.T) {
	c := composed(t, "gostore", "zero-scale", "fp8-paged", "gostore", "", "fp8-paged", 64, 16, 20, 2)
	out := text(c)
	if !hasFinding(c, FindWritten, "scale") || !strings.Contains(out, "check it alone (kvharness check --plugin gostore --layout fp8-paged)") {
		t.Errorf("want the writer's own failure:\n%s", out)
	}
}

func hasFinding(c *Composed, kind, field string) bool {
	for _, r := range c.Rows {
		if r.Failure == nil {
			continue
		}
		for _, f := range r.Failure.Findings {
			if f.Kind == kind && (field == "" || f.Field == field) {
				return true
			}
		}
	}
	return false
}

// TestJudgeSeenNamesTheField: the oracle alone, on keys as the reference
// encodes them: the stored values pass; one group read at one factor is
// its scale field (dsv4-main's ue8m0 "scales", fp8-paged's float32
// "scale"); one code read wrong is the codes' field; a bf16 element read
// wrong is its field; a probe without the slot is missing.
func TestJudgeSeenNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		layout, codes, scales string
		d, group              int
	}{{"fp8-paged", "value", "scale", 128, 0}, {"dsv4-main", "nope", "scales", 512, 2}, {"fp8-ds-mla", "nope", "scales", 576, 3}} {
		l := kindtest.Layout(t, tc.layout, tc.d, 16)
		k := Key{Slot: 17, Vec: Vec{Kind: VecNormal, Seed: 9}}
		recs := l.Encode(k.Data(l.HeadDim))
		stored := DecodeKey(l, recs)
		seen := func(f func(e int, v float64) float64) []map[int64]float32 {
			out := make([]map[int64]float32, l.HeadDim)
			for e := range out {
				out[e] = map[int64]float32{k.Slot: float32(f(e, stored[e]))}
			}
			return out
		}
		if fs := judgeSeen(l, k, recs, seen(func(_ int, v float64) float64 { return v })); len(fs) != 0 {
			t.Fatalf("%s: the stored values: %+v", tc.layout, fs)
		}
		var f *layout.Field
		for i := range l.Fields {
			if l.Fields[i].Name == tc.codes {
				f = &l.Fields[i]
			}
		}
		lo, hi := f.From+tc.group*f.Group, f.From+(tc.group+1)*f.Group
		fs := judgeSeen(l, k, recs, seen(func(e int, v float64) float64 {
			if e >= lo && e < hi {
				return v * 0.75
			}
			return v
		}))
		hex := "float32 0x"
		if tc.layout == "dsv4-main" {
			hex = "ue8m0 0x"
		}
		if len(fs) != 1 || fs[0].Field != tc.scales || fs[0].Group != tc.group || !strings.Contains(fs[0].Detail, "scaled by 0.75") ||
			!strings.Contains(fs[0].Detail, hex) {
			t.Errorf("%s: a group at 0.75: %+v", tc.layout, fs)
		}
		fs = judgeSeen(l, k, recs, seen(func(e int, v float64) float64 {
			if e == lo+1 {
				return v*2 + 1
			}
			return v
		}))
		if len(fs) != 1 || fs[0].Field != tc.codes || fs[0].Wrong != 1 || fs[0].Elements[0].Index != lo+1 {
			t.Errorf("%s: one code: %+v", tc.layout, fs)
		}
		if tc.layout != "fp8-paged" {
			fs = judgeSeen(l, k, recs, seen(func(e int, v float64) float64 {
				if e == l.HeadDim-1 {
					return -v + 1
				}
				return v
			}))
			if len(fs) != 1 || fs[0].Field != "rope" {
				t.Errorf("%s: a rope element: %+v", tc.layout, fs)
			}
		}
		missing := seen(func(_ int, v float64) float64 { return v })
		delete(missing[3], k.Slot)
		if fs := judgeSeen(l, k, recs, missing); len(fs) != 1 || fs[0].Kind != FindMissing {
			t.Errorf("%s: a probe without the slot: %+v", tc.layout, fs)
		}
	}
}
