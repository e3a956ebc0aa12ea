package workload

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
)

// Shape is the geometry one row of a run is checked at: the dimensions a
// kernel's address math and vector widths depend on. A run draws a shape
// per row from what the plugin accepts (a Space), so that a kernel that
// vectorises by 16 elements with no tail, or bakes a page size into its
// address math, meets a row it gets wrong. Heads is the KV heads per
// token of a layout of several (the engines' K/V caches; 0 for a layout
// of one record per slot), so that a kernel that confuses NHD and HND, or
// strides by a head count it assumed, meets several counts, odd ones too.
type Shape struct {
	Heads    int `json:"heads,omitempty"`
	HeadDim  int `json:"head_dim"`
	PageSize int `json:"page_size"`
}

// String is the shape as reports print it: D=120 P=16, or H=3 D=128 P=16
// for a layout of several heads.
func (s Shape) String() string {
	if s.Heads > 1 {
		return fmt.Sprintf("H=%d D=%d P=%d", s.Heads, s.HeadDim, s.PageSize)
	}
	return fmt.Sprintf("D=%d P=%d", s.HeadDim, s.PageSize)
}

// The dimensions serving engines use, and the awkward ones kernels get
// wrong. Head dims are multiples of 8 (what a layout takes); the awkward
// ones are not multiples of 16, so a 16-element vector loop without a
// scalar tail drops their last 8 elements. Page size 1 is the awkward page
// (every slot its own page; a page shift of 0 bits).
var (
	EngineHeadDims  = []int{64, 80, 96, 112, 128, 192, 256, 512, 576}
	EnginePageSizes = []int{1, 16, 32, 64, 128, 256}
	AwkwardHeadDims = []int{8, 24, 40, 72, 120, 136, 200}
)

// HeadCounts are the KV heads per token a run asks a plugin about for a
// layout of several heads: the counts engines shard to, and the odd ones
// tensor parallelism leaves (40 heads over 8 ranks: 5).
var HeadCounts = []int{1, 2, 3, 4, 5, 7, 8, 16}

// HeadDimCandidates is every head dim a run asks a plugin about: the
// awkward ones, then the engines'.
func HeadDimCandidates() []int { return slices.Concat(AwkwardHeadDims, EngineHeadDims) }

// Awkward reports whether a head dim is one of the awkward kind: not a
// multiple of 16.
func Awkward(headDim int) bool { return headDim%16 != 0 }

// Space is the shapes one layout of a run can take: on each axis the
// values the plugin accepts (its Describe lists the layout there), in
// ascending order. A pinned axis (a --head-dim or --page-size flag, or a
// layout that fixes its head dim) holds one value.
type Space struct {
	HeadDims  []int
	PageSizes []int
	// Heads are the head counts a layout of several heads takes; nil for
	// a layout of one record per slot, or when the run pins its heads.
	Heads []int
}

// Single is the space of one shape.
func Single(s Shape) Space { return Space{HeadDims: []int{s.HeadDim}, PageSizes: []int{s.PageSize}} }

// Empty reports whether the space holds no shape.
func (s Space) Empty() bool { return len(s.HeadDims) == 0 || len(s.PageSizes) == 0 }

// Has reports whether the space holds shape x.
func (s Space) Has(x Shape) bool {
	return slices.Contains(s.HeadDims, x.HeadDim) && slices.Contains(s.PageSizes, x.PageSize) &&
		(s.Heads == nil || slices.Contains(s.Heads, max(x.Heads, 1)))
}

// Draw picks the shape of the k-th row a run checks of one layout. Rows
// take turns at what kernels get wrong: row 0 an awkward head dim, row 1
// page size 1 (and, half the time, an awkward head dim), row 2 an
// engine's head dim and page size, row 3 anything the space holds; then
// round again. Only row 1's turn takes page size 1: a page of one token
// makes a paged layout's planes one record (the packed and interleaved
// arrangements coincide), which would hide the bugs that confuse them.
// Within a turn rng picks, so seeds differ; a turn the space cannot serve
// (no awkward head dim accepted) takes any value of that axis. The result
// is always in the space, which must not be empty.
func (s Space) Draw(rng *rand.Rand, k int) Shape {
	awkward := func(d int) bool { return Awkward(d) }
	engineDim := func(d int) bool { return slices.Contains(EngineHeadDims, d) }
	enginePage := func(p int) bool { return p != 1 && slices.Contains(EnginePageSizes, p) }
	one := func(p int) bool { return p == 1 }
	anyDim := func(int) bool { return true }
	anyPage := func(p int) bool { return p != 1 }
	var dim, page func(int) bool
	switch k % 4 {
	case 0:
		dim, page = awkward, enginePage
	case 1:
		dim, page = engineDim, one
		if rng.Intn(2) == 0 {
			dim = awkward
		}
	case 2:
		dim, page = engineDim, enginePage
	default:
		dim, page = anyDim, anyPage
	}
	out := Shape{HeadDim: pick(rng, s.HeadDims, dim), PageSize: pick(rng, s.PageSizes, page)}
	if len(s.Heads) > 0 { // drawn last: a space without heads draws as before
		odd := func(h int) bool { return h%2 == 1 && h > 1 }
		many := func(h int) bool { return h > 1 }
		out.Heads = pick(rng, s.Heads, [](func(int) bool){odd, many, many, many}[k%4])
	}
	return out
}

// pick draws one of the values that want accepts, or any value when none
// does.
func pick(rng *rand.Rand, values []int, want func(int) bool) int {
	var fit []int
	for _, v := range values {
		if want(v) {
			fit = append(fit, v)
		}
	}
	if len(fit) == 0 {
		fit = values
	}
	return fit[rng.Intn(len(fit))]
}

// Unexplored says which candidate values of each axis the space lacks,
// for a report: "" when it lacks none. Pinned axes are not counted: the
// run chose them.
func (s Space) Unexplored(headDims, pageSizes []int) string {
	var parts []string
	if missing := without(headDims, s.HeadDims); len(missing) > 0 {
		parts = append(parts, "head dims "+ints(missing))
	}
	if missing := without(pageSizes, s.PageSizes); len(missing) > 0 {
		parts = append(parts, "page sizes "+ints(missing))
	}
	if s.Heads != nil {
		if missing := without(HeadCounts, s.Heads); len(missing) > 0 {
			parts = append(parts, "head counts "+ints(missing))
		}
	}
	return strings.Join(parts, ", ")
}

func without(all, have []int) []int {
	var out []int
	for _, v := range all {
		if !slices.Contains(have, v) {
			out = append(out, v)
		}
	}
	return out
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}

// RowRand is the random source a run's k-th row of a layout draws its
// shape from: seeded by the run's seed, the layout's name and k, so a
// row's shape does not depend on which other rows the run checks (a
// shard, a single padding).
func RowRand(seed int64, layout string, k int) *rand.Rand {
	h := uint64(seed)*0x9e3779b97f4a7c15 + uint64(k)*0xbf58476d1ce4e5b9
	for _, c := range []byte(layout) {
		h = (h ^ uint64(c)) * 0x100000001b3
	}
	return rand.New(rand.NewSource(int64(h >> 1)))
}

// Axes says which axes of the geometry a run draws per row; the others
// keep the run's one value (a flag that pins it).
type Axes struct{ HeadDim, PageSize, Heads bool }

// Any reports whether any axis is drawn.
func (a Axes) Any() bool { return a.HeadDim || a.PageSize || a.Heads }

// HeadCounts are the head counts a run asks a plugin about for a layout
// of several heads: nil when it does not draw them.
func (a Axes) HeadCounts() []int {
	if a.Heads {
		return HeadCounts
	}
	return nil
}

// Candidates are the values a run asks a plugin about on the axes it
// draws: nil for an axis it does not.
func (a Axes) Candidates() (headDims, pageSizes []int) {
	if a.HeadDim {
		headDims = HeadDimCandidates()
	}
	if a.PageSize {
		pageSizes = EnginePageSizes
	}
	return headDims, pageSizes
}
