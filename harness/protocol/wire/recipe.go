package wire

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// RecipeToProto puts a recipe on the wire. A nil recipe (the plugin
// declares none: the layout's own holds) stays nil; optional fields left
// unset stay unset.
func RecipeToProto(r *layout.Recipe) *kvpb.Recipe {
	if r == nil {
		return nil
	}
	p := &kvpb.Recipe{Eps: copyOf(r.Eps), Saturate: copyOf(r.Saturate)}
	switch r.Scale {
	case layout.ScaleF32:
		p.Scale = kvpb.ScaleRule_SCALE_RULE_F32
	case layout.ScaleUE8M0:
		p.Scale = kvpb.ScaleRule_SCALE_RULE_UE8M0
	}
	if r.Quantize == layout.Reciprocal {
		p.Quantize = kvpb.Quantize_QUANTIZE_RECIPROCAL
	}
	if r.ScaleULPs != nil {
		p.ScaleUlps = new(uint32(max(*r.ScaleULPs, 0)))
	}
	p.NonFinite = NonFiniteToProto(r.NonFinite)
	return p
}

// The non-finite policies on the wire.
var (
	nonFiniteToProto = map[layout.NonFinite]kvpb.NonFinite{
		layout.Propagate: kvpb.NonFinite_NON_FINITE_PROPAGATE,
		layout.Saturate:  kvpb.NonFinite_NON_FINITE_SATURATE,
		layout.Contained: kvpb.NonFinite_NON_FINITE_CONTAINED,
	}
	nonFiniteFromProto = map[kvpb.NonFinite]layout.NonFinite{
		kvpb.NonFinite_NON_FINITE_UNDECLARED: layout.NonFiniteUndeclared,
		kvpb.NonFinite_NON_FINITE_PROPAGATE:  layout.Propagate,
		kvpb.NonFinite_NON_FINITE_SATURATE:   layout.Saturate,
		kvpb.NonFinite_NON_FINITE_CONTAINED:  layout.Contained,
	}
)

// RecipeFromProto reads a declared recipe; nil is nil. An enum value this
// harness does not know is an error naming the field: a newer plugin's
// arithmetic is not to be judged by a guess. The values themselves are
// checked where the recipe meets its layout (layout.Layout.WithRecipe).
func RecipeFromProto(p *kvpb.Recipe) (*layout.Recipe, error) {
	if p == nil {
		return nil, nil
	}
	r := &layout.Recipe{Eps: copyOf(p.Eps), Saturate: copyOf(p.Saturate)}
	switch p.GetScale() {
	case kvpb.ScaleRule_SCALE_RULE_DEFAULT:
	case kvpb.ScaleRule_SCALE_RULE_F32:
		r.Scale = layout.ScaleF32
	case kvpb.ScaleRule_SCALE_RULE_UE8M0:
		r.Scale = layout.ScaleUE8M0
	default:
		return nil, fmt.Errorf("recipe scale %v: this harness knows f32 and ue8m0; update kvharness or declare a known rule", p.GetScale())
	}
	switch p.GetQuantize() {
	case kvpb.Quantize_QUANTIZE_DIVIDE:
	case kvpb.Quantize_QUANTIZE_RECIPROCAL:
		r.Quantize = layout.Reciprocal
	default:
		return nil, fmt.Errorf("recipe quantize %v: this harness knows divide and reciprocal", p.GetQuantize())
	}
	if p.GetRounding() != kvpb.Rounding_ROUNDING_NEAREST_EVEN {
		return nil, fmt.Errorf("recipe rounding %v: this harness knows nearest-even", p.GetRounding())
	}
	if p.ScaleUlps != nil {
		r.ScaleULPs = new(int(min(*p.ScaleUlps, 1<<20)))
	}
	nf, err := NonFiniteFromProto(p.GetNonFinite())
	if err != nil {
		return nil, fmt.Errorf("recipe %w", err)
	}
	r.NonFinite = nf
	return r, nil
}

// NonFiniteToProto puts a non-finite policy on the wire; undeclared is
// NON_FINITE_UNDECLARED.
func NonFiniteToProto(nf layout.NonFinite) kvpb.NonFinite { return nonFiniteToProto[nf] }

// NonFiniteFromProto reads a non-finite policy; a value this harness does
// not know is an error (a newer plugin's policy is not to be judged by a
// guess).
func NonFiniteFromProto(p kvpb.NonFinite) (layout.NonFinite, error) {
	nf, ok := nonFiniteFromProto[p]
	if !ok {
		return "", fmt.Errorf("non_finite %v: this harness knows propagate, saturate and contained", p)
	}
	return nf, nil
}

// copyOf keeps a recipe and its message from sharing an optional field.
func copyOf[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return new(*p)
}
