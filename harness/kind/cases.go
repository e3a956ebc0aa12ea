package kind

import "math/rand"

// Cases is the Draw and Shrink of a kind's property.System, which every
// system that draws from a generator and shrinks with its kind's Shrink
// embeds (read, transfer, load, pdasync), so that the two read the same
// way in each.
type Cases[C any, G interface{ Draw(rng *rand.Rand) C }] struct {
	Gen      G // nil on a replay system: it checks, never draws
	Shrinker func(C) []C
}

// Draw implements property.System.
func (s Cases[C, G]) Draw(rng *rand.Rand) C { return s.Gen.Draw(rng) }

// Shrink implements property.System.
func (s Cases[C, G]) Shrink(c C) []C { return s.Shrinker(c) }
