package layout

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ScaleRule is how a group's scale follows from its largest magnitude.
type ScaleRule string

// The scale rules. The empty rule takes the scale field's kind: f32 for a
// scale-f32 field, ue8m0 for a scale-ue8m0 one. A ue8m0 rule in a
// scale-f32 field is a power-of-two scale stored as a float32; an f32 rule
// cannot be stored in a ue8m0 field, which holds powers of two only.
const (
	ScaleByField ScaleRule = ""
	ScaleF32     ScaleRule = "f32"   // max(amax, eps) / 448, as float32
	ScaleUE8M0   ScaleRule = "ue8m0" // that scale rounded up to a power of two
)

// Quantize is how a value becomes a code given its group's scale.
type Quantize string

// The quantize forms; the empty form divides.
const (
	Divide     Quantize = "divide"     // e4m3(x / s)
	Reciprocal Quantize = "reciprocal" // e4m3(x * (1/s)), as most engine kernels compute it
)

// Rounding is how a float32 quotient becomes an e4m3 code.
type Rounding string

// NearestEven is round to nearest, ties to the even code: the hardware
// conversion's rounding. It is the only one a correct kernel uses; the
// empty rounding means it.
const NearestEven Rounding = "nearest-even"

// NonFinite is what a kernel declares it does with a ±Inf or NaN element
// of a valid row: real activations hold them, and engines have shipped
// kernels where one in a padded row spread into a valid row's scale
// (FlashInfer #3057). A kernel that declares nothing is never given one
// in a valid row of a quantized layout (a bf16 field is a copy: every bit
// is kept, NaN or not, whatever is declared).
type NonFinite string

// The policies.
const (
	// NonFiniteUndeclared: valid rows of the layout hold finite values only.
	NonFiniteUndeclared NonFinite = ""
	// Propagate is the recipe's IEEE arithmetic carried through: an
	// infinite element makes its group's scale infinite (x/∞ codes 0,
	// ∞/∞ NaN), a NaN element codes NaN and leaves the scale to the rest.
	Propagate NonFinite = "propagate"
	// Saturate takes the scale over the finite elements: ±Inf codes ±448,
	// NaN codes NaN.
	Saturate NonFinite = "saturate"
	// Contained is undefined but contained: a row holding one may leave
	// anything in its own record and must leave every other byte alone.
	Contained NonFinite = "contained"
)

// NonFinites lists the declarable policies.
var NonFinites = []NonFinite{Propagate, Saturate, Contained}

// Recipe defaults and bounds.
const (
	// DefaultEps is the floor on amax when a recipe names none: SGLang's
	// and vLLM's CUDA stores use max(1e-4, amax) / 448.
	DefaultEps = 1e-4
	// MaxEps bounds a declared floor: above it the floor, not the data,
	// decides every ordinary row's scale.
	MaxEps = 1.0
	// DefaultScaleULPs is how far, in float32 ulps, a stored scale may lie
	// from the recipe's: 1 takes x/448 against x*fl32(1/448) (PyTorch),
	// and IEEE against approximate division.
	DefaultScaleULPs = 1
	// MaxScaleULPs bounds a declared tolerance: a wider one starts to hide
	// a scale computed from the wrong data.
	MaxScaleULPs = 16
)

// ScaleFloor is the default floor as the float32 the arithmetic uses.
const ScaleFloor = float32(DefaultEps)

// A Recipe is a kernel's fp8 arithmetic for one layout's e4m3 fields: what
// its code believes, as its bytes per token are. The zero value is the
// default recipe (the scale field's rule, eps 1e-4, x/s, nearest even,
// saturating, scales within 1 ulp); optional fields are pointers so that
// "not said" and "zero" differ, as in the protocol's Recipe:
//
//	layout.Recipe{Eps: new(1e-8), Quantize: layout.Reciprocal}
type Recipe struct {
	Scale     ScaleRule `json:"scale,omitempty"`
	Eps       *float64  `json:"eps,omitempty"` // nil: DefaultEps; 0: no floor
	Quantize  Quantize  `json:"quantize,omitempty"`
	Rounding  Rounding  `json:"rounding,omitempty"`
	Saturate  *bool     `json:"saturate,omitempty"`   // nil: true
	ScaleULPs *int      `json:"scale_ulps,omitempty"` // nil: DefaultScaleULPs
	// NonFinite is the kernel's declared policy for ±Inf and NaN in a
	// valid row; empty: none declared.
	NonFinite NonFinite `json:"non_finite,omitempty"`
}

// EpsOr is the recipe's floor: its Eps, or DefaultEps.
func (r Recipe) EpsOr() float64 {
	if r.Eps == nil {
		return DefaultEps
	}
	return *r.Eps
}

// SaturateOr is whether codes past ±448 saturate (the default) rather
// than become NaN.
func (r Recipe) SaturateOr() bool { return r.Saturate == nil || *r.Saturate }

// ScaleULPsOr is the scale tolerance in float32 ulps.
func (r Recipe) ScaleULPsOr() int {
	if r.ScaleULPs == nil {
		return DefaultScaleULPs
	}
	return *r.ScaleULPs
}

// Validate checks the recipe's values, each error naming its field.
func (r Recipe) Validate() error {
	switch r.Scale {
	case ScaleByField, ScaleF32, ScaleUE8M0:
	default:
		return fmt.Errorf("recipe scale %q: want %q or %q (or leave it out: the scale field's kind)", r.Scale, ScaleF32, ScaleUE8M0)
	}
	if e := r.EpsOr(); math.IsNaN(e) || e < 0 || e > MaxEps {
		return fmt.Errorf("recipe eps %v: want a floor in [0, %v] (1e-4 when left out, 0 for none)", e, MaxEps)
	}
	switch r.Quantize {
	case "", Divide, Reciprocal:
	default:
		return fmt.Errorf("recipe quantize %q: want %q (x/s) or %q (x*(1/s))", r.Quantize, Divide, Reciprocal)
	}
	if r.Rounding != "" && r.Rounding != NearestEven {
		return fmt.Errorf("recipe rounding %q: want %q", r.Rounding, NearestEven)
	}
	if u := r.ScaleULPsOr(); u < 0 || u > MaxScaleULPs {
		return fmt.Errorf("recipe scale_ulps %d: want 0 to %d", u, MaxScaleULPs)
	}
	switch r.NonFinite {
	case NonFiniteUndeclared, Propagate, Saturate, Contained:
	default:
		return fmt.Errorf("recipe non_finite %q: want %q, %q or %q (or leave it out: no ±Inf or NaN in valid rows)",
			r.NonFinite, Propagate, Saturate, Contained)
	}
	return nil
}

// String is the recipe in one line, as kvharness plugins prints it.
func (r Recipe) String() string {
	scale := "scale from the scale field"
	switch r.Scale {
	case ScaleF32:
		scale = "scale f32"
	case ScaleUE8M0:
		scale = "scale ue8m0"
	}
	q := "x/s"
	if r.Quantize == Reciprocal {
		q = "x*(1/s)"
	}
	sat := "saturating"
	if !r.SaturateOr() {
		sat = "not saturating"
	}
	out := fmt.Sprintf("%s, eps %s, %s, nearest-even, %s, scale ±%d ulp", scale, FormatEps(r.EpsOr()), q, sat, r.ScaleULPsOr())
	if r.NonFinite != NonFiniteUndeclared {
		out += ", non-finite " + string(r.NonFinite)
	}
	return out
}

// FormatEps writes a floor the way a kernel author writes it: 1e-08 as
// 1e-8, 0.0001 as 1e-4, 0 as 0.
func FormatEps(e float64) string {
	if e == 0 || (e >= 1e-3 && e < 1e4) {
		return strconv.FormatFloat(e, 'g', -1, 64)
	}
	m, x, _ := strings.Cut(strconv.FormatFloat(e, 'e', -1, 64), "e")
	n, _ := strconv.Atoi(x)
	return m + "e" + strconv.Itoa(n)
}

// Quant is a recipe resolved for one e4m3 or e5m2 field: the arithmetic
// the reference encoder and the value judgement follow. Build it with
// [Recipe.Quant] or [Layout.Quant].
type Quant struct {
	Pow2       bool      // the scale is rounded up to a power of two (the ue8m0 rule)
	Store      FieldKind // how the scale is stored: KindScaleF32 or KindScaleUE8M0; empty for a static scale
	Eps        float64   // the floor on amax, as declared; the arithmetic uses it as a float32
	Reciprocal bool      // codes are e4m3(x * (1/s)), not e4m3(x / s)
	Saturate   bool      // quotients past the largest code saturate, not NaN (e4m3) or infinity (e5m2)
	ScaleULPs  int       // how far a stored scale may lie from the recipe's
	NonFinite  NonFinite // the declared policy for ±Inf and NaN elements
	Format     CodeFormat
}

// Static reports whether the scale is a kernel input, not stored.
func (q Quant) Static() bool { return q.Store == "" }

// staticQuant resolves the recipe for a field whose scale the kernel is
// given (x/s or x·(1/s), saturating or not): the scale rule and floor
// have no meaning there and are left as they are.
func (r Recipe) staticQuant() (Quant, error) {
	if err := r.Validate(); err != nil {
		return Quant{}, err
	}
	return Quant{Eps: r.EpsOr(), Reciprocal: r.Quantize == Reciprocal, Saturate: r.SaturateOr(), ScaleULPs: r.ScaleULPsOr(),
		NonFinite: r.NonFinite}, nil
}

// Quant resolves the recipe for an e4m3 field whose scale field has kind
// store.
func (r Recipe) Quant(store FieldKind) (Quant, error) {
	if err := r.Validate(); err != nil {
		return Quant{}, err
	}
	if store != KindScaleF32 && store != KindScaleUE8M0 {
		return Quant{}, fmt.Errorf("scale field kind %q: want %s or %s", store, KindScaleF32, KindScaleUE8M0)
	}
	if store == KindScaleUE8M0 && r.Scale == ScaleF32 {
		return Quant{}, fmt.Errorf("recipe scale %q: a %s field holds powers of two only; use %q or leave it out",
			ScaleF32, KindScaleUE8M0, ScaleUE8M0)
	}
	return Quant{
		Pow2:  r.Scale == ScaleUE8M0 || (r.Scale == ScaleByField && store == KindScaleUE8M0),
		Store: store, Eps: r.EpsOr(), Reciprocal: r.Quantize == Reciprocal,
		Saturate: r.SaturateOr(), ScaleULPs: r.ScaleULPsOr(), NonFinite: r.NonFinite,
	}, nil
}

// DefaultQuant is the default recipe for a scale field of kind store.
func DefaultQuant(store FieldKind) Quant {
	q, err := Recipe{}.Quant(store)
	if err != nil {
		panic(err) // the default recipe fits both kinds
	}
	return q
}

// Recipe is the recipe a resolved Quant came from, every field stated.
func (q Quant) Recipe() Recipe {
	r := Recipe{Scale: ScaleF32, Eps: new(q.Eps), Quantize: Divide, Rounding: NearestEven,
		Saturate: new(q.Saturate), ScaleULPs: new(q.ScaleULPs), NonFinite: q.NonFinite}
	if q.Pow2 {
		r.Scale = ScaleUE8M0
	}
	if q.Reciprocal {
		r.Quantize = Reciprocal
	}
	return r
}

// Quant is the resolved recipe of the named e4m3 or e5m2 field.
func (l *Layout) Quant(field string) (Quant, bool) {
	f, ok := l.fields[field]
	if !ok || !f.Kind.isQuant() {
		return Quant{}, false
	}
	return f.quant, true
}

// NonFinite is the policy the layout's recipes declare for ±Inf and NaN
// in a valid row: that of its first e4m3 or e5m2 field (a declaration
// applies to all of them), Propagate for a layout without one (bf16
// fields are copied, bit for bit).
func (l *Layout) NonFinite() NonFinite {
	for _, f := range l.Fields {
		if f.Kind.isQuant() {
			return l.fields[f.Name].quant.NonFinite
		}
	}
	return Propagate
}

// Quantized reports whether the layout has e4m3 or e5m2 fields: whether
// a recipe means anything for it.
func (l *Layout) Quantized() bool {
	for _, f := range l.Fields {
		if f.Kind.isQuant() {
			return true
		}
	}
	return false
}

// WithRecipe returns the layout with r as the recipe of every e4m3 and
// e5m2 field: what a plugin declared for it. A nil r returns l itself
// (the plugin declared nothing: the layout's own recipes hold). The
// declaration replaces a field's recipe whole; it does not merge with
// it. On a field whose scale is static only its quantize, saturation and
// rounding mean anything.
func (l *Layout) WithRecipe(r *Recipe) (*Layout, error) {
	if r == nil {
		return l, nil
	}
	c := l.clone()
	for i := range c.Fields {
		if c.Fields[i].Kind.isQuant() {
			rc := *r
			c.Fields[i].Recipe = &rc
		}
	}
	if err := c.compile(); err != nil {
		return nil, err
	}
	return c, nil
}

// Resolved returns the layout with every e4m3 and e5m2 field's recipe
// stated in full (rule, eps, quantize, rounding, saturation, ulps; for a
// static scale quantize, rounding and saturation): the same arithmetic,
// written out for a reader — what a repro file records, so that "the
// default" can be read without knowing what it was.
func (l *Layout) Resolved() *Layout {
	c := l.clone()
	for i := range c.Fields {
		if f := l.fields[c.Fields[i].Name]; f.Kind.isQuant() {
			r := f.quant.Recipe()
			if f.quant.Static() {
				r = Recipe{Quantize: r.Quantize, Rounding: r.Rounding, Saturate: r.Saturate}
			}
			c.Fields[i].Recipe = &r
		}
	}
	if err := c.compile(); err != nil {
		panic(fmt.Sprintf("layout %s: its own recipes, stated, do not compile: %v", l.Name, err))
	}
	return c
}
