package pdasync

import (
	"math/rand"
	"slices"
)

// schedule draws the steps: a script per room, by its fate, merged at
// random, a room reusing pages only after the script of the room it waits
// for has ended.
func (g *Gen) schedule(rng *rand.Rand, c *Case) []Step {
	waited := map[int]bool{}
	for _, r := range c.Rooms {
		if r.After != nil {
			waited[*r.After] = true
		}
	}
	scripts := make([][]Step, len(c.Rooms))
	for ri := range c.Rooms {
		s := &script{rng: rng, c: c, ri: ri, settle: waited[ri]}
		scripts[ri] = s.build(g.fate(rng))
	}
	return merge(rng, c, scripts)
}

// fate draws what happens to a room, by profile.
func (g *Gen) fate(rng *rand.Rand) fate {
	weights := map[string][4]int{
		ProfileMixed:      {40, 20, 30, 10},
		ProfileAborts:     {20, 0, 70, 10},
		ProfileFailures:   {20, 70, 10, 0},
		ProfileComponents: {70, 15, 15, 0},
	}[g.Profile]
	if weights == [4]int{} {
		weights = [4]int{40, 20, 30, 10}
	}
	x := rng.Intn(100)
	for f, w := range weights {
		if x < w {
			return fate(f)
		}
		x -= w
	}
	return fateComplete
}

// script builds one room's steps.
type script struct {
	rng    *rand.Rand
	c      *Case
	ri     int
	settle bool // a room waits for this one's pages: deliver everything by the end
	out    []Step
}

func (s *script) add(steps ...Step) { s.out = append(s.out, steps...) }

func (s *script) build(f fate) []Step {
	if s.rng.Intn(3) == 0 {
		s.add(Poll()) // with every gate of the room held
	}
	switch all := s.handles(); f {
	case fateFail:
		s.fail(all)
	case fateAbort:
		s.abort(all)
	case fateAbortLate:
		for _, h := range all {
			s.add(Release(h))
		}
		s.add(Abort(s.ri))
		s.deliverAll()
	default:
		s.complete()
	}
	return s.out
}

// handles lists the room's handles in a random order.
func (s *script) handles() []HandleRef {
	var out []HandleRef
	for ci, comp := range s.c.Rooms[s.ri].Components {
		for k := range comp.Handles {
			out = append(out, HandleRef{s.ri, ci, k})
		}
	}
	s.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// complete opens one component's handles at a time and delivers its notes
// (in some order, or not before the drain) before the next is opened.
func (s *script) complete() {
	comps := s.c.Rooms[s.ri].Components
	for _, ci := range s.rng.Perm(len(comps)) {
		ks := s.rng.Perm(len(comps[ci].Handles))
		for _, k := range ks {
			s.add(Release(HandleRef{s.ri, ci, k}))
		}
		s.deliver(ci)
	}
}

// deliver delivers a component's notes: all at once, the component note
// before its handles' or after, or (unless the room must settle) not yet.
func (s *script) deliver(ci int) {
	switch n := s.rng.Intn(4); {
	case n == 0:
		s.add(Deliver(s.ri, ci, DeliverAll))
	case n == 1:
		s.add(Deliver(s.ri, ci, DeliverComponent), Deliver(s.ri, ci, DeliverHandles))
	case n == 2 || s.settle:
		s.add(Deliver(s.ri, ci, DeliverHandles), Deliver(s.ri, ci, DeliverComponent))
	}
}

func (s *script) deliverAll() {
	for ci := range s.c.Rooms[s.ri].Components {
		s.deliver(ci)
	}
}

// fail fails one handle while some siblings are still held, delivers the
// failure, then opens the rest.
func (s *script) fail(all []HandleRef) {
	hf, others := all[0], all[1:]
	pre := s.rng.Intn(max(1, len(others))) // leaves at least one sibling held, when there is one
	for _, h := range others[:pre] {
		s.add(Release(h))
	}
	s.add(Fail(hf))
	if s.rng.Intn(2) == 0 {
		s.add(Deliver(s.ri, hf.Comp, DeliverHandles))
	} else {
		s.add(Deliver(s.ri, hf.Comp, DeliverAll))
	}
	for _, h := range others[pre:] {
		s.add(Release(h))
	}
	s.deliverAll()
}

// abort opens some of the room's handles (never all, when there are
// several), aborts it, then opens the rest: their copies land after the
// abort, when a decode that freed at once has reassigned the pages.
func (s *script) abort(all []HandleRef) {
	pre := s.rng.Intn(len(all))
	for _, h := range all[:pre] {
		s.add(Release(h))
	}
	if pre > 0 && s.rng.Intn(2) == 0 {
		s.add(Deliver(s.ri, all[0].Comp, DeliverAll))
	}
	s.add(Abort(s.ri))
	for _, h := range all[pre:] {
		s.add(Release(h))
	}
	s.deliverAll()
}

// merge interleaves the scripts at random; a room that waits for another's
// pages starts once that room's script has ended. Now and then everything
// withheld is delivered at once.
func merge(rng *rand.Rand, c *Case, scripts [][]Step) []Step {
	var out []Step
	next := make([]int, len(scripts))
	done := func(ri int) bool { return next[ri] == len(scripts[ri]) }
	for {
		var ready []int
		for ri, r := range c.Rooms {
			if !done(ri) && (r.After == nil || done(*r.After)) {
				ready = append(ready, ri)
			}
		}
		if len(ready) == 0 {
			return out
		}
		ri := ready[rng.Intn(len(ready))]
		out = append(out, scripts[ri][next[ri]])
		next[ri]++
		if rng.Intn(40) == 0 && !slices.Contains(out, DeliverEverything()) {
			out = append(out, DeliverEverything())
		}
	}
}
