package layout

import (
	"fmt"
	"math"
	"sort"
)

// Inputs are what a store call passes its kernel besides the rows that
// the stored bytes depend on: the static scales of fields that store none
// (vLLM's and SGLang's fp8 caches divide by a k_scale and v_scale the
// caller passes; vLLM's NVFP4 cache takes its global scale as 1/k_scale).
type Inputs struct {
	// Scales holds each tensor's static scales by tensor name ("" for the
	// unnamed tensor of a single-tensor layout): one value for a field
	// scaled per tensor, one per head for a field scaled per head. A
	// tensor not named takes 1, the engines' default scale.
	Scales map[string][]float32
}

// scale is the static scale of field f's head h.
func (in Inputs) scale(l *Layout, f *fieldInfo, h int) float32 {
	s := in.Scales[l.TensorNames()[f.tensor]]
	switch {
	case len(s) == 0:
		return 1
	case f.Static == PerHead && len(s) == l.heads:
		return s[h]
	}
	return s[0]
}

// ScaleInputs lists the static scales a layout's encoding depends on: for
// each tensor that has one, one per tensor or one per head.
func (l *Layout) ScaleInputs() map[string]ScaleGrain {
	out := map[string]ScaleGrain{}
	for _, f := range l.order {
		if f.Static == "" {
			continue
		}
		name := l.TensorNames()[f.tensor]
		if out[name] != PerHead {
			out[name] = f.Static
		}
	}
	return out
}

// CheckInputs says whether in gives the layout's static scales as its
// fields want them: per tensor one finite positive value, per head one
// each (or one for all), no scale for a tensor without static fields.
// The error names the tensor and the fix.
func (l *Layout) CheckInputs(in Inputs) error {
	want := l.ScaleInputs()
	names := make([]string, 0, len(in.Scales))
	for n := range in.Scales {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := in.Scales[n]
		g, ok := want[n]
		switch {
		case !ok:
			return fmt.Errorf("layout %s: a static scale for tensor %q, which has no field scaled by one (static scales: %v)", l.Name, n, want)
		case g == PerTensor && len(s) != 1, g == PerHead && len(s) != 1 && len(s) != l.heads:
			return fmt.Errorf("layout %s: tensor %q has %d static scales; want %s", l.Name, n, len(s), grainWant(g, l.heads))
		}
		for i, v := range s {
			if !(v > 0) || math.IsInf(float64(v), 0) || math.IsInf(float64(1/v), 0) {
				return fmt.Errorf("layout %s: tensor %q static scale %d is %v; want a finite positive float32 whose inverse is finite", l.Name, n, i, v)
			}
		}
	}
	return nil
}

func grainWant(g ScaleGrain, heads int) string {
	if g == PerHead {
		return fmt.Sprintf("1 or %d (one per head)", heads)
	}
	return "1 (one per tensor)"
}
