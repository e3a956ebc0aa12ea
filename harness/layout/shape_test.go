package layout

import (
	"errors"
	"math"
	"testing"
)

// TestReshaped: a built-in layout takes any head dim and page size and
// keeps a declared recipe; a fixed one, or a layout file, keeps its head
// dim and takes a page size.
func TestReshaped(t *testing.T) {
	l, _ := Builtin("fp8-paged", 128, 64)
	l, err := l.WithRecipe(&Recipe{Eps: new(1e-8), NonFinite: Saturate})
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Reshaped(120, 1)
	if err != nil || r.HeadDim != 120 || r.PageSize != 1 || r.BytesPerToken() != 124 || r.NonFinite() != Saturate {
		t.Fatalf("fp8-paged at D=120 P=1: %+v, %v", r, err)
	}
	if q, _ := r.Quant("value"); q.Eps != 1e-8 {
		t.Errorf("the declared recipe's eps did not carry over: %v", q.Eps)
	}
	fixed, _ := Builtin("dsv4-main", 0, 64)
	if _, err := fixed.Reshaped(128, 64); !errors.Is(err, ErrInvalid) {
		t.Errorf("dsv4-main at D=128: %v", err)
	}
	if r, err := fixed.Reshaped(512, 16); err != nil || r.PageSize != 16 {
		t.Errorf("dsv4-main at P=16: %v", err)
	}
	file, err := Parse([]byte(`{"name": "mine", "head_dim": 64, "fields": [{"name": "v", "kind": "bf16", "from": 0, "to": 64}], "planes": [["v"]]}`), 64)
	if err != nil {
		t.Fatal(err)
	}
	if file.HeadDims() == nil {
		t.Error("a layout file's head dim is not fixed")
	}
	if r, err := file.Reshaped(64, 1); err != nil || r.PageSize != 1 {
		t.Errorf("a layout file at P=1: %v", err)
	}
}

// TestNonFinitePolicies: the policy a layout's recipe declares, Propagate
// for a layout without fp8 fields, and the amax each takes: Saturate
// leaves ±Inf out, the others count it; NaN never counts.
func TestNonFinitePolicies(t *testing.T) {
	bf, _ := Builtin("bf16", 64, 16)
	fp, _ := Builtin("fp8-rows", 64, 16)
	if bf.NonFinite() != Propagate || fp.NonFinite() != NonFiniteUndeclared {
		t.Errorf("bf16 %q, undeclared fp8-rows %q", bf.NonFinite(), fp.NonFinite())
	}
	group := []uint16{0x3f80, 0x7f80, 0xffc0, 0x4000} // 1, +Inf, -NaN, 2
	prop := DefaultQuant(KindScaleF32)
	prop.NonFinite = Propagate
	sat := prop
	sat.NonFinite = Saturate
	if a := prop.Amax(group); !math.IsInf(float64(a), 1) {
		t.Errorf("propagate amax %v, want +Inf", a)
	}
	if a := sat.Amax(group); a != 2 {
		t.Errorf("saturate amax %v, want 2", a)
	}
	if err := (Recipe{NonFinite: "ignore"}).Validate(); err == nil {
		t.Error("an unknown policy validated")
	}
}
