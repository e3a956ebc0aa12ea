package layout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"hash"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/today.golden.json from this tree's layouts")

// goldenPath holds digests of everything the five layouts of the original
// schema answered before the layout algebra replaced the planes model:
// geometry, JSON, footprints, owners of every byte of a small pool,
// encodings, judgements of damaged records, don't-care spans. The test
// recomputes them through today's API: the same digests prove the
// algebra gives byte-identical answers.
const goldenPath = "testdata/today.golden.json"

// goldenCases are the layouts and geometries the digests cover.
func goldenCases() []struct {
	name string
	d, p int
} {
	var out []struct {
		name string
		d, p int
	}
	for _, name := range []string{"bf16", "fp8-paged", "fp8-rows", "fp8-ds-mla", "dsv4-main"} {
		dims := []int{0}
		if name == "bf16" || name == "fp8-paged" || name == "fp8-rows" {
			dims = []int{64, 128, 576}
		}
		for _, d := range dims {
			for _, p := range []int{1, 3, 16, 64} {
				out = append(out, struct {
					name string
					d, p int
				}{name, d, p})
			}
		}
	}
	return out
}

// goldenDigests computes one digest per (layout, geometry, question).
func goldenDigests(t *testing.T) map[string]string {
	out := map[string]string{}
	recipes := []*Recipe{nil, {Eps: new(1e-8), Quantize: Reciprocal}, {Eps: new(0.0)}, {Saturate: new(false), ScaleULPs: new(0)}}
	for _, c := range goldenCases() {
		l, err := Builtin(c.name, c.d, c.p)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%s/d=%d/p=%d", c.name, l.HeadDim, c.p)
		sum := func(what string, f func(h hash.Hash)) {
			h := sha256.New()
			f(h)
			out[key+"/"+what] = hex.EncodeToString(h.Sum(nil))
		}
		slots := 2*c.p + 3
		sum("geometry", func(h hash.Hash) {
			fmt.Fprintln(h, l.BytesPerToken(), l.PageBytes(), l.PoolBytes(slots), l.Pages(slots), l.RowBytes(), l.Quantized(), len(l.Planes))
			for i := range l.Planes {
				fmt.Fprintln(h, l.PlaneFields(i), l.DontCare(i))
				for k := range 700 {
					fmt.Fprint(h, l.Cares(i, k))
				}
			}
			for _, f := range l.Fields {
				p, s, ok := l.FieldSpan(f.Name)
				q, qok := l.Quant(f.Name)
				fmt.Fprintln(h, f.Name, p, s, ok, q.Pow2, q.Store, q.Eps, q.Reciprocal, q.Saturate, q.ScaleULPs, qok)
			}
		})
		sum("json", func(h hash.Hash) {
			h.Write(l.JSON())
			h.Write(l.Resolved().JSON())
			back, err := Parse(l.JSON(), 7)
			if err != nil {
				t.Fatal(err)
			}
			h.Write(back.JSON())
		})
		sum("footprint", func(h hash.Hash) {
			for s := int64(-c.p - 2); s < int64(3*c.p+3); s++ {
				fmt.Fprintln(h, s, l.Footprint(s), l.FootprintPaged(s, l.PageBytes()+16))
			}
			for _, s := range []int64{1 << 20, 1<<31 + 5, 1<<40 + 3} {
				fmt.Fprintln(h, s, l.Footprint(s))
			}
			if len(l.Planes) == 1 && len(l.Planes[0]) > 1 {
				var planes [][]string
				for _, n := range l.Planes[0] {
					planes = append(planes, []string{n})
				}
				alt, err := l.Rearranged(planes)
				if err != nil {
					t.Fatal(err)
				}
				for s := int64(-1); s < int64(2*c.p+1); s++ {
					fmt.Fprintln(h, s, alt.Footprint(s), alt.PageBytes())
				}
			}
		})
		sum("locate", func(h hash.Hash) {
			for off := -3; off < l.PoolBytes(slots)+5; off++ {
				o, ok := l.Locate(off, slots)
				fmt.Fprintln(h, off, o.Slot, o.Plane, o.Field, o.Offset, ok)
			}
		})
		for ri, r := range recipes {
			lr, err := l.WithRecipe(r)
			if err != nil {
				continue // a recipe the layout takes no recipe for
			}
			sum(fmt.Sprintf("encode-judge/recipe=%d", ri), func(h hash.Hash) {
				rng := rand.New(rand.NewPCG(uint64(c.p), uint64(ri)))
				for i := range 60 {
					row := randomRow(rng, lr.HeadDim, i%5)
					recs := lr.Encode(row)
					for _, rec := range recs {
						h.Write(rec)
					}
					// Damage a few bytes, judge in both modes.
					for k := range 1 + i%3 {
						p := rng.IntN(len(recs))
						at := rng.IntN(len(recs[p]))
						recs[p][at] ^= byte(1 << ((i + k) % 8))
					}
					for _, m := range []Mode{ByRecipe, Exact} {
						for _, f := range lr.Judge(row, recs, m) {
							fmt.Fprintln(h, f.String(), f.Rule, f.Field, f.Group, f.Plane, f.Bytes, f.Want)
						}
					}
				}
			})
		}
	}
	return out
}

// TestTodayLayoutsUnchanged compares today's answers with the digests the
// planes model gave (see goldenPath).
func TestTodayLayoutsUnchanged(t *testing.T) {
	got := goldenDigests(t)
	if *updateGolden {
		b, _ := json.MarshalIndent(got, "", " ")
		if err := os.WriteFile(filepath.FromSlash(goldenPath), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(filepath.FromSlash(goldenPath))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("%s: the answers differ from the planes model's", k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d digests, the golden file has %d", len(got), len(want))
	}
}
