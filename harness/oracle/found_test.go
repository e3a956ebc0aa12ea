package oracle

import (
	"strings"
	"testing"
)

// kv is a kind's violation in its simplest form.
type kv struct {
	k      Kind
	detail string
}

func (v kv) KindOf() Kind       { return v.k }
func (v kv) Generic() Violation { return Violation{Kind: v.k, Detail: v.detail} }

func TestFoundAndKeepPerKind(t *testing.T) {
	var f Found[kv]
	if f.Failed() || f.Has(Geometry) {
		t.Fatal("an empty Found fails")
	}
	for i := range 5 {
		f.Add(kv{Determinism, string(rune('a' + i))})
	}
	f.Add(kv{Geometry, "g"})
	if !f.Has(Geometry) || f.Has(Value) || f.NumViolations() != 6 || f.Generic()[5].Detail != "g" {
		t.Errorf("Found answers wrong: %+v", f.Generic())
	}
	kept := KeepPerKind(f.Violations, []Kind{Geometry, Determinism}, 2, func(v *kv, more string) { v.detail += more })
	var got []string
	for _, v := range kept {
		got = append(got, v.detail)
	}
	if want := "g|a|b (and 3 more determinism violations)"; strings.Join(got, "|") != want {
		t.Errorf("kept %q, want %q", strings.Join(got, "|"), want)
	}
}

func TestFirstDiff(t *testing.T) {
	for _, tc := range []struct {
		a, b []byte
		want int
	}{
		{[]byte{1, 2, 3}, []byte{1, 2, 3}, -1},
		{[]byte{1, 2, 3}, []byte{1, 9, 3}, 1},
		{[]byte{1, 2}, []byte{1, 2, 3}, 2},
		{nil, nil, -1},
	} {
		if got := FirstDiff(tc.a, tc.b); got != tc.want {
			t.Errorf("FirstDiff(% x, % x) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
