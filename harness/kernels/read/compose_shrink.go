package read

import (
	"context"
	"slices"
)

// maxShrinkChecks bounds the re-checks a composed failure's shrinking
// spends: each is a store and a read in the two plugins.
const maxShrinkChecks = 64

// shrink looks for a smaller case that still fails, as the store kind's
// shrinker does for one kernel: first without the padded rows (a pair
// that disagrees on layout or scales fails without them), then one key
// alone, then halves of the keys. It returns the smallest failing case
// found, its findings and the re-checks spent; a re-check that faults
// ends the search with what was found before it.
func (p *pair) shrink(ctx context.Context, c *ComposedCase, fs []ComposeFinding, cfg ComposeConfig) (*ComposedCase, []ComposeFinding, int) {
	checks := 0
	try := func(t *ComposedCase) bool {
		if checks >= maxShrinkChecks || ctx.Err() != nil || len(t.Keys) == 0 {
			return false
		}
		checks++
		got, err := p.check(ctx, t, cfg)
		if err != nil || len(got) == 0 {
			return false
		}
		c, fs = t, got
		return true
	}
	if len(c.Pad) > 0 {
		try(&ComposedCase{Seed: c.Seed, Padding: c.Padding, Keys: c.Keys})
	}
	for len(c.Keys) > 1 {
		smaller := false
		for _, k := range c.Keys { // the failing key alone, when there is one
			if try(&ComposedCase{Seed: c.Seed, Padding: c.Padding, Keys: []Key{k}, Pad: c.Pad}) {
				smaller = true
				break
			}
		}
		if smaller {
			break
		}
		half := len(c.Keys) / 2
		if !try(&ComposedCase{Seed: c.Seed, Padding: c.Padding, Keys: slices.Clone(c.Keys[:half]), Pad: c.Pad}) &&
			!try(&ComposedCase{Seed: c.Seed, Padding: c.Padding, Keys: slices.Clone(c.Keys[half:]), Pad: c.Pad}) {
			break
		}
	}
	return c, fs, checks
}
