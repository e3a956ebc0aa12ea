package read

import (
	"container/heap"
	"context"
	"encoding/binary"
	"math"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/sdk"
	sdkread "github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/internal/testtier"
)

// heapRead is a read kernel written apart from the bundled ones, in
// another style: keys found from the layouts' own definitions, every
// element dequantized and the dot product summed in float64 (rounded to
// float32 once), each request's k best kept in a min-heap
// (container/heap), one goroutine per request. It ranks a NaN score below
// every number and shares nothing between requests: correct under the
// contained policy.
type heapRead struct{}

func (heapRead) Read(_ context.Context, c *sdkread.Call) error {
	var wg sync.WaitGroup
	for r := range c.Requests {
		wg.Go(func() { heapRequest(c, r) })
	}
	wg.Wait()
	return nil
}

func heapRequest(c *sdkread.Call, r int) {
	q := make([]float64, c.Pool.Layout.HeadDim)
	for d, e := range c.Query(r) {
		q[d] = float64(math.Float32frombits(uint32(e) << 16))
	}
	h := &worstFirst{}
	for _, slot := range c.List(r) {
		var dot float64
		for d, k := range heapKey(c, slot) {
			dot += q[d] * k
		}
		heap.Push(h, heapToken{slot, float32(dot)})
		if h.Len() > c.K {
			heap.Pop(h)
		}
	}
	slots, scores := c.OutSlots[r*c.K:(r+1)*c.K], c.OutScores[r*c.K:(r+1)*c.K]
	for i := range slots {
		slots[i], scores[i] = -1, float32(math.NaN())
	}
	for i := h.Len() - 1; i >= 0; i-- {
		t := heap.Pop(h).(heapToken)
		slots[i], scores[i] = t.slot, t.score
	}
}

// heapKey is a slot's key: bf16 rows of 2·D bytes; fp8-rows records of D
// codes and a float32 scale; fp8-paged pages of P·D codes, then P scales.
func heapKey(c *sdkread.Call, slot int64) []float64 {
	l, pool := c.Pool.Layout, c.Arena[c.Pool.Base:]
	d, p := int64(l.HeadDim), int64(l.PageSize)
	out := make([]float64, d)
	if l.Name == "bf16" {
		for i := range out {
			out[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(pool[slot*2*d+2*int64(i):])) << 16))
		}
		return out
	}
	codes, scale := slot*(d+4), slot*(d+4)+d
	if l.Name == "fp8-paged" {
		page := slot / p * p * (d + 4)
		codes, scale = page+slot%p*d, page+p*d+slot%p*4
	}
	s := float64(math.Float32frombits(binary.LittleEndian.Uint32(pool[scale:])))
	for i := range out {
		out[i] = e4m3Value(pool[codes+int64(i)]) * s
	}
	return out
}

// e4m3Value is an e4m3 code's value by the format's definition: sign,
// four exponent bits (bias 7), three mantissa bits, S.1111.111 NaN.
func e4m3Value(c byte) float64 {
	e, m := int(c>>3&15), float64(c&7)
	v := math.Ldexp(1+m/8, e-7)
	switch {
	case e == 15 && m == 7:
		v = math.NaN()
	case e == 0:
		v = math.Ldexp(m/8, -6)
	}
	if c&0x80 != 0 {
		return -v
	}
	return v
}

type heapToken struct {
	slot  int64
	score float32
}

// worstFirst is a heap whose root is the token the result would list
// last: a NaN score, else the lowest, and of equal scores the higher slot.
type worstFirst []heapToken

func (h worstFirst) Len() int      { return len(h) }
func (h worstFirst) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h worstFirst) Less(i, j int) bool {
	a, b := h[i], h[j]
	an, bn := a.score != a.score, b.score != b.score
	switch {
	case an || bn:
		return an && (!bn || a.slot > b.slot)
	case a.score != b.score:
		return a.score < b.score
	}
	return a.slot > b.slot
}
func (h *worstFirst) Push(x any) { *h = append(*h, x.(heapToken)) }
func (h *worstFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// heapPlugin serves heapRead for bf16, fp8-paged and fp8-rows, declaring
// policy for ±Inf and NaN.
func heapPlugin(policy layout.NonFinite) *plugin.Plugin {
	return plugin.InProcess("heapread", sdk.Services(sdk.Plugin{Name: "heapread", Version: "1.0.0", Kernel: heapRead{},
		Kinds: []sdk.Kind{sdkread.Kind}, ReadNonFinite: policy,
		Geometry: func(_ string, d, p int) []sdk.Geometry {
			return []sdk.Geometry{{Layout: "bf16", BytesPerToken: 2 * d, BytesPerPage: 2 * d * p},
				{Layout: "fp8-paged", BytesPerToken: d + 4, BytesPerPage: (d + 4) * p},
				{Layout: "fp8-rows", BytesPerToken: d + 4, BytesPerPage: (d + 4) * p}}
		}}))
}

// TestHeapControlPasses: the control passes drawn cases with ±Inf and
// NaN in some requests on every layout (and some cases mix such requests
// with judged ones), and the same cases' finite ones without a policy.
func TestHeapControlPasses(t *testing.T) {
	cases := testtier.Pick(40, 100, 400)
	for _, name := range []string{"bf16", "fp8-paged", "fp8-rows"} {
		for _, policy := range []layout.NonFinite{layout.Contained, layout.NonFiniteUndeclared} {
			p := heapPlugin(policy)
			tg, err := Open(context.Background(), p, plugintest.Dir(t), Config{Backend: arena.SHM{}, Layout: kindtest.Layout(t, name, 128, 64),
				Slots: 1024, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if tg.NonFinite != policy {
				t.Fatalf("declared %q, target holds %q", policy, tg.NonFinite)
			}
			g := NewSystem(tg).Gen
			rng, mixed := rand.New(rand.NewSource(5)), 0
			for range cases {
				c := g.Draw(rng)
				res, err := tg.Check(context.Background(), c)
				if err != nil {
					t.Fatal(err)
				}
				if res.Failed() {
					t.Fatalf("%s, policy %q: %v: %v", name, policy, c, res.Violations)
				}
				if c.firstNonFinite() != "" && len(c.Requests) > 1 {
					mixed++
				}
			}
			if (mixed > 0) != (policy == layout.Contained) {
				t.Errorf("%s, policy %q: %d cases with ±Inf or NaN among several requests", name, policy, mixed)
			}
			tg.Close(context.Background())
		}
	}
}

// TestNoPolicyNoNonFinite: a target whose plugin declares nothing refuses
// a case with ±Inf or NaN, naming the vector and the fix.
func TestNoPolicyNoNonFinite(t *testing.T) {
	tg, err := Open(context.Background(), heapPlugin(""), plugintest.Dir(t), Config{Backend: arena.SHM{}, Layout: kindtest.Layout(t, "bf16", 128, 64),
		Slots: 256, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(context.Background())
	_, err = tg.Check(context.Background(), containedCase())
	if err == nil || !strings.Contains(err.Error(), "request 2's query holds ±Inf or NaN") || !strings.Contains(err.Error(), "declare read_non_finite contained") {
		t.Errorf("error %v", err)
	}
}
