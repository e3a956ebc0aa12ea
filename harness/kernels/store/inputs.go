package store

import (
	"math/rand"
	"slices"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Static scales. vLLM's and SGLang's fp8 caches (and vLLM's NVFP4 one)
// store no scale: the caller passes k_scale and v_scale and the kernel
// stores code(x / scale). A target passes every store the same scales,
// drawn from its seed so that a replay passes them again: never 1, where
// a kernel that multiplies by the scale, or ignores it, stores what a
// correct one does.

// inputsFor is the static scales a target passes: given ones (checked
// against the layout), or, for a layout that takes some, ones drawn from
// seed.
func inputsFor(l *layout.Layout, given layout.Inputs, seed int64) (layout.Inputs, error) {
	if len(given.Scales) > 0 {
		return given, l.CheckInputs(given)
	}
	want := l.ScaleInputs()
	if len(want) == 0 {
		return layout.Inputs{}, nil
	}
	rng := rand.New(rand.NewSource(seed ^ 0x5ca1e))
	in := layout.Inputs{Scales: map[string][]float32{}}
	for _, name := range sortedKeys(want) {
		n := 1
		if want[name] == layout.PerHead {
			n = l.NumHeads()
		}
		s := make([]float32, n)
		for h := range s {
			s[h] = drawScale(rng)
		}
		in.Scales[name] = s
	}
	return in, l.CheckInputs(in)
}

// drawScale is a scale as calibration leaves them: a power of two times
// a factor in [1, 2), between 1/64 and 4, never exactly 1.
func drawScale(rng *rand.Rand) float32 {
	for {
		s := float32((1 + rng.Float64()) * float64(int(1)<<rng.Intn(9)) / 64)
		if s != 1 {
			return s
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// scalesProto is the target's static scales on the wire, by tensor name.
func (t *Target) scalesProto() []*kvpb.TensorScales {
	var out []*kvpb.TensorScales
	for _, name := range sortedKeys(t.Inputs.Scales) {
		out = append(out, &kvpb.TensorScales{Tensor: name, Values: t.Inputs.Scales[name]})
	}
	return out
}
